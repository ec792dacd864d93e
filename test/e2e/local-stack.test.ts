/** The local stack driven from outside, as a new user would: `npm start`, the request topic, Firestore. */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { LOCAL_DEFAULT_CONFIG } from '../../shared/config/local-default.js';
import { instanceName } from '../../shared/domain/names.js';
import { proxyDocSchema } from '../../shared/domain/status.js';
import { eventually } from '../support/eventually.js';
import { processesMatching, startLocalStack, type RunningStack } from './stack.js';
import { localEgressPolicy } from '../../shared/config/egress-policy.js';

const run = promisify(execFile);
const OFFSET = 300;
const dir = mkdtempSync(join(tmpdir(), 'egress-e2e-config-'));
const configFile = join(dir, 'egress.yaml');
const relayConfigFile = join(dir, 'relay.yaml');
let stack: RunningStack;

const request = (name: string, provider = 'local', action = 'apply') => ({
  apiVersion: 'egress.dev/v1',
  kind: 'Proxy',
  action,
  metadata: { name },
  spec: { provider },
});
const publish = (body: unknown) =>
  stack.pubsub
    .topic('proxy-requests')
    .publishMessage({ data: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)) });
const proxy = async (name: string) => {
  const data = (await stack.db.collection('proxies').doc(name).get()).data();
  return data ? proxyDocSchema.parse(data) : undefined;
};
const phase = async (name: string) => (await proxy(name))?.status.phase;
const ready = (name: string, ms: number) => eventually(async () => expect(await phase(name)).toBe('Ready'), ms, 500);
/** This stack's proxy processes of `name` (another stack's proxy of the same name may run beside it). */
const pidsOf = (name: string) => processesMatching(`--egress-proxy=${instanceName('local', name)}`, stack.home);
async function curlThrough(name: string): Promise<string> {
  const doc = await proxy(name);
  const creds = (await stack.db.collection('credentials').doc(name).get()).data();
  const url = `http://${encodeURIComponent(String(creds?.['username']))}:${encodeURIComponent(String(creds?.['password']))}@${String(doc?.status.address)}`;
  const { stdout } = await run('curl', ['-sS', '--max-time', '5', '-x', url, `http://127.0.0.1:${8088 + OFFSET}/`]);
  return stdout;
}
const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

beforeAll(async () => {
  writeFileSync(configFile, stringify({ ...LOCAL_DEFAULT_CONFIG }));
  const state = join(dir, 'relay-state');
  writeFileSync(
    relayConfigFile,
    stringify({
      relay: 'local',
      project: 'demo-egress',
      subscription: 'relay-commands-local',
      reportsTopic: 'relay-reports',
      echoUrl: 'http://127.0.0.1:8088/',
      probeIntervalSeconds: 2,
      reportIntervalSeconds: 2,
      probeTimeoutSeconds: 3,
      installationId: 'local',
      backends: [
        {
          provider: 'local',
          type: 'process',
          stateDir: join(state, 'local'),
          bindAddresses: ['127.0.0.1'],
          portRange: [23000, 23099],
          // The local stack's fence: loopback stands in for the Internet (the echo is on it).
          egress: localEgressPolicy([]),
        },
        {
          provider: 'later',
          type: 'process',
          stateDir: join(state, 'later'),
          bindAddresses: ['127.0.0.1'],
          portRange: [23100, 23199],
          egress: localEgressPolicy([]),
        },
      ],
    }),
  );
  stack = await startLocalStack({
    EGRESS_PORT_OFFSET: String(OFFSET),
    EGRESS_CONFIG: configFile,
    EGRESS_RELAY_CONFIG: relayConfigFile,
  });
});

afterAll(async () => {
  if (stack && stack.process.exitCode === null) await stack.interrupt();
});

describe('e2e: local stack', () => {
  it('npm start brings the sample fleet to Ready and prints a working curl line', async () => {
    for (const name of ['local-1', 'local-2', 'local-rotating']) expect(await phase(name)).toBe('Ready');
    const line = stack
      .output()
      .split('\n')
      .find((l) => l.includes('curl -x'));
    expect(line).toBeDefined();
    const args = (line ?? '')
      .trim()
      .replace(/^try a proxy:\s+/, '')
      .split(/\s+/)
      .slice(1);
    const { stdout } = await run('curl', ['-sS', '--max-time', '5', ...args]);
    expect(JSON.parse(stdout)).toHaveProperty('ip');
    expect(stack.localEnv()).toMatchObject({
      GOOGLE_CLOUD_PROJECT: 'demo-egress',
      FIRESTORE_EMULATOR_HOST: `127.0.0.1:${8080 + OFFSET}`,
      PUBSUB_EMULATOR_HOST: `127.0.0.1:${8085 + OFFSET}`,
    });
  });

  it('a request published three times to proxy-requests is Ready within 30 s with exactly one instance', async () => {
    const body = request('topic-1');
    await Promise.all([publish(body), publish(body), publish(body)]);
    await ready('topic-1', 30_000);
    expect(JSON.parse(await curlThrough('topic-1'))).toHaveProperty('ip', '127.0.0.1');
    expect(pidsOf('topic-1')).toHaveLength(1);
    const inventory = await stack.db.collection('relays/local/instances').where('proxy', '==', 'topic-1').get();
    expect(inventory.size).toBe(1);
  });

  it('a killed proxy process is replaced and Ready again within 60 s, and its events say why', async () => {
    const [pid] = pidsOf('topic-1');
    expect(pid).toBeDefined();
    process.kill(pid ?? 0, 'SIGKILL');
    await eventually(async () => expect(await phase('topic-1')).not.toBe('Ready'), 20_000, 200);
    await ready('topic-1', 60_000);
    const [newPid] = pidsOf('topic-1');
    expect(newPid).not.toBe(pid);
    expect(pidsOf('topic-1')).toHaveLength(1);
    const events = await stack.db.collection('proxies/topic-1/events').get();
    const messages = events.docs.map((d) => `${String(d.get('reason'))}: ${String(d.get('message'))}`);
    expect(messages.some((m) => /Terminated/.test(m) && /Replace/.test(m))).toBe(true);
  });

  it('restarting the relay loses no proxy and duplicates none', async () => {
    const names = ['local-1', 'local-2', 'local-rotating', 'topic-1'];
    const before = names.map((n) => pidsOf(n));
    const bootBefore = (await stack.db.collection('relays').doc('local').get()).get('bootId') as string;
    const relayPid = Number(readFileSync(join(stack.home, 'relay.pid'), 'utf8'));
    process.kill(relayPid, 'SIGKILL');
    await eventually(
      async () => expect((await stack.db.collection('relays').doc('local').get()).get('bootId')).not.toBe(bootBefore),
      30_000,
      500,
    );
    await eventually(
      async () => {
        for (const n of names) expect(await phase(n)).toBe('Ready');
      },
      30_000,
      500,
    );
    expect(names.map((n) => pidsOf(n))).toEqual(before);
  });

  it('a malformed message and an invalid name are rejected with the field, once, and other work goes on', async () => {
    const bad = await publish('{"apiVersion": "egress.dev/v1", ');
    const badName = await publish(request('Not_A_Name'));
    await eventually(
      async () => {
        const [a, b] = await Promise.all([
          stack.db.collection('rejections').doc(bad).get(),
          stack.db.collection('rejections').doc(badName).get(),
        ]);
        expect(a.get('field')).toBe('(message)');
        expect(b.get('field')).toBe('metadata.name');
        expect(String(b.get('reason'))).toMatch(/DNS-1123/);
      },
      15_000,
      500,
    );
    await publish(request('after-bad'));
    await ready('after-bad', 30_000);
  });

  it('a proxy naming an unconfigured provider waits, can be deleted, and proceeds once the provider is configured', async () => {
    await publish(request('waits-1', 'later'));
    await publish(request('waits-2', 'later'));
    await eventually(
      async () => {
        for (const n of ['waits-1', 'waits-2']) {
          const doc = await proxy(n);
          const provisioned = doc?.status.conditions.find((c) => c.type === 'Provisioned');
          expect(provisioned?.reason).toBe('ProviderNotConfigured');
        }
      },
      30_000,
      500,
    );
    await publish(request('waits-2', 'later', 'delete'));
    await eventually(async () => expect(await proxy('waits-2')).toBeUndefined(), 30_000, 500);
    writeFileSync(
      configFile,
      stringify({
        ...LOCAL_DEFAULT_CONFIG,
        // The options every local provider has (local-default.ts): a lost command is resent in 10 s.
        providers: [...LOCAL_DEFAULT_CONFIG.providers, { ...LOCAL_DEFAULT_CONFIG.providers[0], name: 'later' }],
      }),
    );
    const trail = () => stack.trail('waits-1').join('\n');
    try {
      await ready('waits-1', 60_000);
    } catch (err) {
      throw new Error(`waits-1 not Ready: ${JSON.stringify((await proxy('waits-1'))?.status)}\n${trail()}`, {
        cause: err,
      });
    }
    // Ready, but only after a second create (a lost command sent again): say so, with the trail.
    const creates = stack.trail('waits-1').filter((l) => l.startsWith('function-') && l.includes('"action":"create"'));
    if (creates.length > 1) console.log(`waits-1 was created ${creates.length} times:\n${trail()}`);
  });

  it('a delete request removes the instance and the document within 30 s', async () => {
    await publish(request('topic-1', 'local', 'delete'));
    await eventually(
      async () => {
        expect(await proxy('topic-1')).toBeUndefined();
        expect(pidsOf('topic-1')).toHaveLength(0);
        expect((await stack.db.collection('credentials').doc('topic-1').get()).exists).toBe(false);
      },
      30_000,
      500,
    );
  });

  it('every process of the stack listens on loopback only (functions, fronts, emulators, relay, proxies)', async () => {
    const { stdout } = await run('ss', ['-ltnpH']);
    const ours = descendants(stack.process.pid ?? 0);
    const listening = stdout
      .split('\n')
      .map((line) => ({
        local: line.split(/\s+/)[3] ?? '',
        pids: [...line.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1])),
      }))
      .filter((l) => l.pids.some((pid) => ours.has(pid)));
    // The API's instance and its front at least, and every function's.
    expect(listening.length).toBeGreaterThan(10);
    for (const { local } of listening)
      expect(local, local).toMatch(/^(127\.\d+\.\d+\.\d+|\[::1\]|\[::ffff:127\.[\d.]+\]):\d+$/);
  });

  it('Ctrl-C leaves no process and no port behind', async () => {
    const code = await stack.interrupt();
    expect(code).toBe(0);
    expect(processesMatching(stack.home)).toEqual([]);
    expect(processesMatching(dir)).toEqual([]);
    for (const port of [8080, 8085, 8088, 8090, 8091, 8092, 8093, 8094, 8095, 8096])
      expect(await portOpen(port + OFFSET)).toBe(false);
  });
});

/** `root` and every process below it, from /proc's parent links. */
function descendants(root: number): Set<number> {
  const parent = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Field 4 of /proc/PID/stat, after the command in parentheses (which may hold spaces).
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // the process ended while we looked
    }
  }
  const found = new Set([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, ppid] of parent)
      if (!found.has(pid) && found.has(ppid)) {
        found.add(pid);
        grew = true;
      }
  }
  return found;
}
