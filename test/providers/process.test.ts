/**
 * The `process` provider against the shared contract, exactly as the functions use it: the
 * relay-backed provider publishes commands on the real Pub/Sub emulator, a real relay agent runs
 * real proxy processes, and its reports are applied to the real Firestore emulator.
 */
import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PubSub, type Message } from '@google-cloud/pubsub';
import { build } from 'esbuild';
import { createPubSubBus } from '../../shared/bus/pubsub.js';
import { decodeBody } from '../../shared/bus/message.js';
import { parseConfig } from '../../shared/config/load.js';
import { createLogger } from '../../shared/logger.js';
import { createRegistry } from '../../shared/providers/registry.js';
import { handleRelayReport } from '../../shared/relay-report.js';
import { createFirestore } from '../../shared/store/firestore.js';
import { RelayStore } from '../../shared/store/relays.js';
import { createRelayAgent } from '../../relay/agent.js';
import { createBackends } from '../../relay/backends/create-backends.js';
import { stopAllInstances } from '../../relay/backends/process/index.js';
import { findByMarkers } from '../../relay/backends/process/processes.js';
import { parseRelayConfig } from '../../relay/config.js';
import { emulatorEnv } from '../support/emulator-env.js';
import { runProviderContract } from './contract.case.js';

runProviderContract({
  type: 'process',
  timeoutMs: 20_000,
  async setup() {
    const emu = emulatorEnv('contract-process');
    const state = mkdtempSync(join(tmpdir(), 'egress-contract-'));
    mkdirSync(join(process.cwd(), 'node_modules', '.cache'), { recursive: true });
    // Outside dist/ (a build wipes it) but under node_modules/, so the bundle's imports resolve.
    const proxyServerPath = join(mkdtempSync(join(process.cwd(), 'node_modules', '.cache', 'egress-contract-')), 'proxy-server.js');
    await build({ entryPoints: ['relay/backends/process/proxy-server.ts'], bundle: true, platform: 'node', format: 'esm', packages: 'external', outfile: proxyServerPath });
    mkdirSync('test-results', { recursive: true });
    const logger = createLogger({ write: (l) => appendFileSync('test-results/process-contract.log', `${l}\n`), level: 'DEBUG' });
    const pubsub = new PubSub({ projectId: emu.projectId });
    await pubsub.createTopic('relay-commands');
    await pubsub.createTopic('relay-reports');
    await pubsub.createTopic('proxy-checks');
    const [commands] = await pubsub.createSubscription('relay-commands', 'relay-commands-ct', { filter: 'attributes.relay = "ct"' });
    const [reports] = await pubsub.createSubscription('relay-reports', 'reports-pump');

    const relayConfig = parseRelayConfig({
      relay: 'ct',
      project: emu.projectId,
      subscription: commands.name.split('/').pop(),
      reportsTopic: 'relay-reports',
      echoUrl: 'http://127.0.0.1:9/',
      probeIntervalSeconds: 60,
      reportIntervalSeconds: 1,
      probeTimeoutSeconds: 2,
      installationId: 'contract',
      backends: [{ provider: 'proc', type: 'process', stateDir: state, bindAddresses: ['127.0.0.1'], portRange: [24000, 24099] }],
    });
    const backends = createBackends(relayConfig, { logger, proxyServerPath });
    const agent = createRelayAgent({ config: relayConfig, pubsub, backends, logger });
    await agent.start();

    // What the `relay-report` function does, fed from a pull subscription instead of a push.
    const db = createFirestore(emu.projectId);
    const relays = new RelayStore(db, logger);
    const bus = createPubSubBus(pubsub);
    reports.on('message', (m: Message) => {
      handleRelayReport({ relays, bus, logger }, decodeBody(m.id, m.publishTime.getTime(), m.attributes, m.data.toString('utf8')))
        .then(() => m.ack())
        .catch((err: unknown) => {
          logger.error('report pump failed', { error: err });
          m.nack();
        });
    });

    const config = parseConfig({
      installationId: 'contract',
      echoUrl: 'http://127.0.0.1:9/',
      providers: [{ name: 'proc', type: 'process', relay: 'ct', options: { heartbeatTimeoutSeconds: 30 } }],
    });
    const provider = createRegistry({ config, relays, bus, logger }).get('proc');
    if (!provider) throw new Error('registry built no provider');
    return {
      provider,
      installationId: 'contract',
      placement: { bindAddress: '127.0.0.1' },
      invalidPlacement: { placement: { bindAddress: '10.255.255.1' }, field: 'spec.placement.bindAddress' },
      async kill(instance) {
        for (const pid of await findByMarkers([`--egress-proxy=${instance.name}`])) process.kill(pid, 'SIGKILL');
      },
      async cleanup() {
        await agent.stop();
        await reports.close();
        await stopAllInstances(state);
        await pubsub.close();
        rmSync(state, { recursive: true, force: true });
        rmSync(dirname(proxyServerPath), { recursive: true, force: true });
      },
    };
  },
});
