/** Entry of the relay process: config, backends, agent; SIGINT/SIGTERM stop it (proxies keep running). */
import { PubSub } from '@google-cloud/pubsub';
import { createPubSubBus } from '../shared/bus/pubsub.js';
import { createLogger } from '../shared/logger.js';
import { relayOwnKeys, UNSIGNED_RELAYS_ENV, type SigningKey } from '../shared/wire/signature.js';
import { loadTelemetryConfig } from '../shared/telemetry/config.js';
import { startTelemetry, type Telemetry } from '../shared/telemetry/setup.js';
import { createRelayAgent } from './agent.js';
import { createBackends } from './backends/create-backends.js';
import { loadRelayConfig, type RelayConfig } from './config.js';
import { createPullSubscription } from './pull-subscription.js';

function fatal(message: string): never {
  process.stderr.write(`relay: ${message}\n`);
  process.exit(1);
}

async function main(): Promise<void> {
  let config: RelayConfig;
  let keys: readonly SigningKey[] | undefined;
  try {
    config = loadRelayConfig();
    keys = relayOwnKeys(process.env, config.relay);
  } catch (err) {
    fatal(`invalid configuration: ${err instanceof Error ? err.message : String(err)}`);
  }
  const logger = createLogger({ project: config.project, base: { component: 'relay', relay: config.relay } });
  if (!keys) logger.warn(`reports and commands are not signed (${UNSIGNED_RELAYS_ENV}=development)`);
  let telemetry: Telemetry | undefined;
  try {
    const telemetryConfig = { ...loadTelemetryConfig(process.env), project: config.project };
    telemetry = await startTelemetry({ service: 'egress-relay', config: telemetryConfig, logger });
  } catch (err) {
    logger.error('telemetry could not start; running without it', { error: err });
  }
  const pubsub = new PubSub({ projectId: config.project });
  const backends = createBackends(config, { logger });
  const agent = createRelayAgent({
    config,
    bus: createPubSubBus(pubsub),
    backends,
    logger,
    keys,
    subscribe: (name, max) => createPullSubscription(pubsub, name, max),
  });

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) {
      logger.warn('second signal: exiting now', { signal });
      process.exit(1);
    }
    stopping = true;
    logger.info('stopping the relay', { signal });
    agent
      .stop()
      .then(() => Promise.all([...backends.values()].map((b) => b.close())))
      .then(() => pubsub.close())
      .then(() => telemetry?.shutdown())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error('relay did not stop cleanly', { error: err });
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  await agent.start();
}

main().catch((err: unknown) => fatal(err instanceof Error ? err.message : String(err)));
