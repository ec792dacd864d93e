/**
 * Every deployable function source (dist/functions/<name>/, what infra/terraform uploads) under the
 * nodejs22 runtime's Node major: functions-framework serves it from a copy that sees only the
 * packages its package.json lists, and it answers one real request against the emulators.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../infra/local/emulators.js';
import { waitForPort } from '../../infra/local/children.js';
import { TOPICS } from '../../shared/bus/topics.js';
import { createFirestore } from '../../shared/store/firestore/client.js';
import { emulatorEnv } from '../support/emulator-env.js';
import { node22 } from '../support/node22.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const built = join(root, 'dist', 'functions');
const emu = emulatorEnv('node22');
const work = mkdtempSync(join(tmpdir(), 'egress-node22-'));
const UNSIGNED = 'relay messages are not authenticated';

/** A Pub/Sub push as functions-framework receives it (a binary-mode CloudEvent). */
function pushed(topic: string, body: unknown, attributes: Record<string, string> = {}): RequestInit {
  const id = String(Math.floor(Math.random() * 1e9));
  return {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'ce-id': id,
      'ce-specversion': '1.0',
      'ce-type': 'google.cloud.pubsub.topic.v1.messagePublished',
      'ce-source': `//pubsub.googleapis.com/projects/${emu.projectId}/topics/${topic}`,
      'ce-time': new Date().toISOString(),
    },
    body: JSON.stringify({
      message: {
        data: Buffer.from(JSON.stringify(body)).toString('base64'),
        attributes,
        messageId: id,
        publishTime: new Date().toISOString(),
      },
      subscription: `projects/${emu.projectId}/subscriptions/${topic}-push`,
    }),
  };
}

const apply = {
  apiVersion: 'egress.dev/v1',
  kind: 'Proxy',
  action: 'apply',
  metadata: { name: 'n22' },
  spec: { provider: 'local' },
};

/** One request per function, and what its answer must be. */
const REQUESTS: Record<string, { path?: string; init: RequestInit; status: number }> = {
  api: { path: '/healthz', init: { method: 'GET' }, status: 200 },
  requests: { init: pushed('proxy-requests', apply, { action: 'apply' }), status: 204 },
  check: { init: pushed(TOPICS.proxyChecks, { names: ['n22-absent'] }), status: 204 },
  gc: { init: pushed('gc-ticks', {}), status: 204 },
  health: { init: pushed('health-ticks', {}), status: 204 },
  'relay-report': { init: pushed('relay-reports', { not: 'a report' }, { relay: 'local' }), status: 204 },
};

interface Served {
  child: ChildProcess;
  port: number;
  log: () => string;
}
const served = new Map<string, Served>();

/** A copy of the deployable with a node_modules holding only what its package.json names. */
function deployable(name: string): string {
  const dir = join(work, name);
  cpSync(join(built, name), dir, { recursive: true });
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  for (const dep of Object.keys(pkg.dependencies ?? {})) {
    const link = join(dir, 'node_modules', dep);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(join(root, 'node_modules', dep), link);
  }
  return dir;
}

beforeAll(async () => {
  if (!existsSync(built)) throw new Error('dist/functions is missing: run `npm run build` first');
  const pubsub = new PubSub({ projectId: emu.projectId });
  for (const topic of [TOPICS.proxyChecks, TOPICS.relayCommands]) await pubsub.createTopic(topic);
  await pubsub.close();
  const node = node22();
  for (const name of readdirSync(built).sort()) {
    const source = deployable(name);
    const port = await freePort();
    const main = join(source, 'node_modules', '@google-cloud', 'functions-framework', 'build', 'src', 'main.js');
    const child = spawn(node, [main, `--target=${name}`, `--source=${source}`, `--port=${port}`], {
      // No relay keys, by the development flag (without it the relay-backed providers are refused:
      // shared/runtime.ts, tested in shared/wire/signature.test.ts): what the warning below checks.
      env: { PATH: process.env['PATH'], HOME: process.env['HOME'], ...emu.env, EGRESS_UNSIGNED_RELAYS: 'development' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout?.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr?.on('data', (c: Buffer) => (out += c.toString('utf8')));
    served.set(name, { child, port, log: () => out });
  }
  await Promise.all(
    [...served.values()].map((s) =>
      waitForPort('127.0.0.1', s.port, 60_000).catch((err: unknown) => {
        throw new Error(`${String(err)}\n${s.log()}`);
      }),
    ),
  );
}, 120_000);

afterAll(async () => {
  await Promise.all(
    [...served.values()].map(async ({ child }) => {
      if (child.exitCode !== null || child.pid === undefined) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      process.kill(child.pid, 'SIGTERM');
      await exited;
    }),
  );
  rmSync(work, { recursive: true, force: true });
});

describe('deployable functions on Node 22', () => {
  it('is a nodejs22 source: Node 22, ESM, main index.js, only the framework and on-demand SDKs as dependencies', () => {
    expect(readdirSync(built).sort()).toEqual(Object.keys(REQUESTS).sort());
    for (const name of Object.keys(REQUESTS)) {
      const pkg = JSON.parse(readFileSync(join(built, name, 'package.json'), 'utf8')) as Record<string, unknown>;
      expect(pkg).toMatchObject({ type: 'module', main: 'index.js', engines: { node: '>=22' } });
      expect(Object.keys(pkg['dependencies'] as object)).toContain('@google-cloud/functions-framework');
      expect(Object.keys(pkg['dependencies'] as object)).not.toContain('@google-cloud/pubsub');
      expect(Object.keys(pkg['dependencies'] as object)).not.toContain('@google-cloud/firestore');
    }
  });

  it.each(Object.entries(REQUESTS))('%s serves one request', async (name, { path = '/', init, status }) => {
    const s = served.get(name);
    if (!s) throw new Error(`${name} was not started`);
    const res = await fetch(`http://127.0.0.1:${s.port}${path}`, init);
    expect(res.status, `${name} answered ${res.status}: ${await res.clone().text()}\n${s.log()}`).toBe(status);
    expect(s.log()).not.toMatch(/"severity":"ERROR"/);
  });

  it('the apply went through requests to Firestore, and was checked in that invocation', async () => {
    const doc = await createFirestore(emu.projectId, emu.env).doc('proxies/n22').get();
    expect(doc.exists).toBe(true);
    // No relay reports here, so the check found the provider down and said so on Provisioned.
    expect(doc.get('status.conditions')).toContainEqual(
      expect.objectContaining({ type: 'Provisioned', reason: 'ProviderDown' }),
    );
  });

  it('warns of unauthenticated relay messages only where relay messages are handled, once per process', async () => {
    const report = served.get('relay-report');
    if (!report) throw new Error('relay-report was not started');
    const again = await fetch(`http://127.0.0.1:${report.port}/`, pushed('relay-reports', {}, { relay: 'local' }));
    expect(again.status).toBe(204);
    expect(report.log().split(UNSIGNED)).toHaveLength(2);
    // requests sends relay commands (it reconciles the proxy it recorded): it warns too, once; api never does.
    expect(served.get('requests')?.log().split(UNSIGNED)).toHaveLength(2);
    expect(served.get('api')?.log()).not.toContain(UNSIGNED);
  });
});
