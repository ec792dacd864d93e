/** The relay agent over an in-memory stand-in for Pub/Sub: ack/nack rules, reports, stop. */
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { Socket } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createBus } from '../shared/bus/pubsub.js';
import { RetryableError } from '../shared/errors.js';
import { createLogger } from '../shared/logger.js';
import { traceIdOf } from '../shared/telemetry/propagation.js';
import { eventually } from '../test/support/eventually.js';
import { recordSpans } from '../test/support/span-recorder.js';
import { toWire } from '../shared/wire/command-wire.js';
import { relayReportSchema, type RelayCommand, type RelayReport } from '../shared/wire/protocol.js';
import {
  generateRelayKeys,
  parseRelayKeys,
  signText,
  verifySignature,
  type SigningKey,
} from '../shared/wire/signature.js';
import { createRelayAgent, type RelayAgent } from './agent.js';
import { LOCAL_RELAY_CONFIG, parseRelayConfig } from './config.js';
import { FakeBackend } from './testing/fake-backend.js';

class FakeSubscription extends EventEmitter {
  closed = false;
  constructor(readonly options: { name: string; maxInFlight: number }) {
    super();
  }
  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

/** The agent's transport in memory: the real bus over a recording send, and subscriptions to emit on. */
class FakeTransport {
  subscriptions: FakeSubscription[] = [];
  reports: Array<{ report: RelayReport; attributes: Record<string, string> }> = [];
  failPublish = false;
  subscribe = (name: string, maxInFlight: number): FakeSubscription => {
    const sub = new FakeSubscription({ name, maxInFlight });
    this.subscriptions.push(sub);
    return sub;
  };
  bus = createBus(async (topic, data, attributes) => {
    await Promise.resolve();
    if (this.failPublish) throw new Error('publish failed');
    expect(topic).toBe('relay-reports');
    this.reports.push({ report: relayReportSchema.parse(JSON.parse(data.toString())), attributes });
    return String(this.reports.length);
  });
}

function message(body: unknown, attributes: Record<string, string> = { relay: 'local' }) {
  const m = {
    id: `m-${Math.random()}`,
    data: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
    attributes,
    publishTime: new Date(),
    acks: 0,
    nacks: 0,
    ack: () => void m.acks++,
    nack: () => void m.nacks++,
  };
  return m;
}

/** Waits (at most 2 s) until the agent has acked or nacked `m`. */
async function settled(m: { id: string; acks: number; nacks: number }): Promise<void> {
  await eventually(
    () => expect(m.acks + m.nacks, `message ${m.id} neither acked nor nacked`).toBeGreaterThan(0),
    2000,
    5,
  );
}

const createCommand = (name: string, issuedAt: number, commandId: string): RelayCommand => ({
  kind: 'create',
  commandId,
  relay: 'local',
  provider: 'local',
  issuedAt,
  spec: {
    name,
    proxy: name,
    installationId: 'local',
    specHash: 'h',
    port: 0,
    placement: {},
    credentials: { username: 'u', password: 'pw-secret' },
  },
});

describe('relay agent', () => {
  const logLines: string[] = [];
  const logger = createLogger({ write: (l) => logLines.push(l), level: 'DEBUG' });
  // An echo on port 80, which the default fence admits (the probes here never reach it).
  const config = parseRelayConfig({
    ...LOCAL_RELAY_CONFIG,
    echoUrl: 'http://echo.example.com/',
    probeIntervalSeconds: 3600,
    reportIntervalSeconds: 3600,
  });
  let dir: string;
  let transport: FakeTransport;
  let backend: FakeBackend;
  let agent: RelayAgent;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'egress-agent-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    expect(logLines.join('\n')).not.toContain('pw-secret');
  });
  const startAgent = async (keys?: readonly SigningKey[]) => {
    transport = new FakeTransport();
    backend = new FakeBackend('local');
    agent = createRelayAgent({
      config,
      bus: transport.bus,
      subscribe: transport.subscribe,
      backends: new Map([['local', backend]]),
      logger,
      keys,
      ledgerFile: path.join(dir, `${Math.random()}.json`),
    });
    await agent.start();
  };
  beforeEach(async () => {
    await startAgent();
    return () => agent.stop();
  });
  const sub = () => {
    const s = transport.subscriptions[0];
    if (!s) throw new Error('not subscribed');
    return s;
  };

  /** Waits for the report the agent sends after a command (the first carrying a result). */
  const reportedResult = () =>
    eventually(
      () =>
        expect(
          transport.reports.some((r) => r.report.results.length > 0),
          `no report carrying a result among ${transport.reports.length}`,
        ).toBe(true),
      2000,
      5,
    );

  it('subscribes with flow control and reports at once', async () => {
    expect(sub().options).toEqual({ name: config.subscription, maxInFlight: 16 });
    await agent.reportNow();
    const first = transport.reports[0];
    expect(first?.attributes).toMatchObject({ relay: 'local' });
    expect(first?.report).toMatchObject({
      relay: 'local',
      seq: 0,
      providers: [{ name: 'local', ok: true }],
      instances: [],
      results: [],
    });
  });

  it('acks a command after applying it and reports its result and inventory', async () => {
    const m = message(createCommand('ep-a', 1, 'c1'));
    sub().emit('message', m);
    await settled(m);
    expect(m).toMatchObject({ acks: 1, nacks: 0 });
    expect(backend.instances.has('ep-a')).toBe(true);
    await reportedResult();
    await agent.reportNow();
    const withResult = transport.reports.find((r) => r.report.results.length > 0)?.report;
    expect(withResult?.results).toEqual([
      { commandId: 'c1', provider: 'local', name: 'ep-a', kind: 'create', ok: true },
    ]);
    expect(withResult?.instances[0]).toMatchObject({
      name: 'ep-a',
      provider: 'local',
      commandId: 'c1',
      state: 'Running',
    });
    const seqs = transport.reports.map((r) => r.report.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(transport.reports.map((r) => r.report.bootId)).size).toBe(1);
    expect(transport.reports.at(-1)?.report.results).toEqual([]);
  });

  it('probes a created instance before reporting it, so the report carries its health', async () => {
    // A proxy that answers the probe's request over the tunnel itself, as the echo endpoint would.
    const proxy = http.createServer();
    proxy.on('connect', (_req, socket: Socket) => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      socket.once('data', () => {
        const body = JSON.stringify({ ip: '203.0.113.7' });
        socket.end(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const address = proxy.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      const command = createCommand('ep-a', 1, 'c1');
      if (command.kind === 'create') command.spec.port = port;
      const m = message(command);
      sub().emit('message', m);
      await settled(m);
      // The probe and interval loops wait an hour (config): only the report after the create can carry health.
      await reportedResult();
      const report = transport.reports.find((r) => r.report.results.length > 0)?.report;
      expect(report?.instances[0]?.health).toMatchObject({ ok: true, egressIp: '203.0.113.7', consecutiveFailures: 0 });
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('reports a created instance whose first probe fails without health (the probe round counts failures)', async () => {
    const m = message(createCommand('ep-a', 1, 'c1'));
    sub().emit('message', m);
    await settled(m);
    await reportedResult();
    const report = transport.reports.find((r) => r.report.results.length > 0)?.report;
    expect(report?.instances[0]).toMatchObject({ name: 'ep-a', state: 'Running' });
    expect(report?.instances[0]?.health).toBeUndefined();
  });

  it('acks and ignores commands for another relay, by attribute or by body', async () => {
    const byAttribute = message(createCommand('ep-a', 1, 'c1'), { relay: 'other' });
    const byBody = message({ ...createCommand('ep-b', 1, 'c2'), relay: 'other' }, {});
    sub().emit('message', byAttribute);
    sub().emit('message', byBody);
    await settled(byAttribute);
    await settled(byBody);
    expect([byAttribute.acks, byBody.acks]).toEqual([1, 1]);
    expect(backend.calls).toEqual([]);
  });

  it('acks an invalid command with a warning naming the field', async () => {
    const { spec: _dropped, ...noSpec } = createCommand('ep-a', 1, 'c1') as Extract<RelayCommand, { kind: 'create' }>;
    const invalid = message(noSpec);
    const notJson = message('{nope');
    sub().emit('message', invalid);
    sub().emit('message', notJson);
    await settled(invalid);
    await settled(notJson);
    expect([invalid.acks, notJson.acks]).toEqual([1, 1]);
    const warning = logLines
      .map((l): Record<string, unknown> => z.record(z.string(), z.unknown()).parse(JSON.parse(l)))
      .find((l) => l['message'] === 'invalid relay command' && l['field']);
    // It names what the command claims to be about, so it lands in that proxy's trail.
    expect(warning).toMatchObject({ severity: 'WARNING', field: 'spec', kind: 'create', provider: noSpec.provider });
  });

  it('acks a transient backend failure and reports it, so the reconciler backs off', async () => {
    backend.fail = () => new RetryableError('busy');
    const m = message(createCommand('ep-a', 1, 'c1'));
    sub().emit('message', m);
    await settled(m);
    expect(m).toMatchObject({ acks: 1, nacks: 0 });
    await agent.reportNow();
    expect(transport.reports.flatMap((r) => r.report.results)).toMatchObject([
      { commandId: 'c1', ok: false, error: { code: 'Retryable', message: 'busy' } },
    ]);
  });

  it('keeps results until a report carrying them is published', async () => {
    transport.failPublish = true;
    const m = message(createCommand('ep-a', 1, 'c1'));
    sub().emit('message', m);
    await settled(m);
    await expect(agent.reportNow()).rejects.toThrow('publish failed');
    transport.failPublish = false;
    await agent.reportNow();
    expect(transport.reports.flatMap((r) => r.report.results.map((x) => x.commandId))).toEqual(['c1']);
  });

  it('reports a command in its trace: the report message continues it and names it for the instance', async () => {
    const recorder = recordSpans();
    try {
      const trace = '4bf92f3577b34da6a3ce929d0e0e4736';
      const m = message(createCommand('ep-a', 1, 'c1'), {
        relay: 'local',
        traceparent: `00-${trace}-00f067aa0ba902b7-01`,
      });
      sub().emit('message', m);
      await settled(m);
      await agent.reportNow();
      const reported = transport.reports.find((r) => r.report.results.length > 0);
      expect(traceIdOf(reported?.attributes['traceparent'] ?? '')).toBe(trace);
      expect(traceIdOf(reported?.report.traces?.['ep-a'] ?? '')).toBe(trace);
      const [consumer] = recorder.named('process relay-commands');
      expect(consumer?.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
      expect(recorder.named('backend.create')[0]?.parentSpanContext?.spanId).toBe(consumer?.spanContext().spanId);
    } finally {
      await recorder.stop();
    }
  });

  it('stops pulling, sends a last report and leaves instances running', async () => {
    const m = message(createCommand('ep-a', 1, 'c1'));
    sub().emit('message', m);
    await settled(m);
    const before = transport.reports.length;
    await agent.stop();
    expect(sub().closed).toBe(true);
    expect(transport.reports.length).toBeGreaterThan(before);
    expect(backend.instances.has('ep-a')).toBe(true);
  });
  const keyring = parseRelayKeys(generateRelayKeys(['local', 'other']));
  const keys = keyring.get('local') ?? [];
  const otherKey = keyring.get('other')?.[0];
  /** Signed, and its credentials sealed, as the functions publish it; `clear` leaves them in clear. */
  const signed = (command: RelayCommand, key = keys[0], clear = false) => {
    const text = JSON.stringify(clear ? command : toWire(command, key));
    return message(text, { relay: 'local', ...(key ? signText(key, 'command', text) : {}) });
  };

  it('with keys, signs every report with its first key, over the exact body', async () => {
    await agent.stop();
    await startAgent(keys);
    await agent.reportNow();
    const sent = transport.reports.at(-1);
    expect(sent?.attributes).toMatchObject({ relay: 'local', keyId: 'k1' });
    expect(verifySignature(keys, 'report', sent?.attributes ?? {}, JSON.stringify(sent?.report))).toBeUndefined();
  });

  it("with keys, applies a command signed with one; refuses, acks and logs one unsigned, signed by another relay's key or altered", async () => {
    await agent.stop();
    await startAgent(keys);
    const good = signed(createCommand('ep-good', 1, 'c1'));
    const unsigned = message(createCommand('ep-unsigned', 1, 'c2'));
    const foreign = signed(createCommand('ep-foreign', 1, 'c3'), otherKey);
    const altered = signed(createCommand('ep-altered', 1, 'c4'));
    altered.data = Buffer.from(
      JSON.stringify(createCommand('ep-altered', 1, 'c4')).replace('ep-altered', 'ep-swapped'),
    );
    for (const m of [good, unsigned, foreign, altered]) sub().emit('message', m);
    for (const m of [good, unsigned, foreign, altered]) await settled(m);
    expect([good, unsigned, foreign, altered].map((m) => m.acks)).toEqual([1, 1, 1, 1]);
    expect([...backend.instances.keys()]).toEqual(['ep-good']);
    const refusals = logLines
      .map((l): Record<string, unknown> => z.record(z.string(), z.unknown()).parse(JSON.parse(l)))
      .filter((l) => l['message'] === 'relay command refused');
    expect(refusals.map((l) => [l['messageId'], l['field'], l['instance']])).toEqual([
      [unsigned.id, 'attributes.keyId', 'ep-unsigned'],
      [foreign.id, 'attributes.signature', 'ep-foreign'],
      [altered.id, 'attributes.signature', 'ep-swapped'],
    ]);
  });

  it('with keys, opens sealed credentials for the backend; refuses clear ones and a box moved to another command', async () => {
    await agent.stop();
    await startAgent(keys);
    const sealed = signed(createCommand('ep-sealed', 1, 'c5'));
    expect(sealed.data.toString()).not.toContain('pw-secret');
    const clear = signed(createCommand('ep-clear', 1, 'c6'), keys[0], true);
    const wire = toWire(createCommand('ep-moved', 1, 'c7'), keys[0]);
    const moved = JSON.stringify({ ...wire, commandId: 'c8' });
    const movedMessage = message(moved, { relay: 'local', ...(keys[0] ? signText(keys[0], 'command', moved) : {}) });
    for (const m of [sealed, clear, movedMessage]) sub().emit('message', m);
    for (const m of [sealed, clear, movedMessage]) await settled(m);
    expect([...backend.instances.keys()]).toEqual(['ep-sealed']);
    expect(backend.instances.get('ep-sealed')?.credentials).toEqual({ username: 'u', password: 'pw-secret' });
    const invalid = logLines
      .map((l): Record<string, unknown> => z.record(z.string(), z.unknown()).parse(JSON.parse(l)))
      .filter((l) => l['message'] === 'invalid relay command' && l['instance'] !== undefined);
    expect(invalid.map((l) => [l['messageId'], l['field']]).slice(-2)).toEqual([
      [clear.id, 'spec.credentials'],
      [movedMessage.id, 'spec.credentials'],
    ]);
    expect(logLines.join('\n')).not.toContain('pw-secret');
  });
});
