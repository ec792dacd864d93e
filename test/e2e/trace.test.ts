/** One apply on the local stack is one trace across every Pub/Sub hop and the relay; logs are JSON and carry it. */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { z } from 'zod';
import { readSpanFile } from '../../infra/local/trace-view.js';
import { LOCAL_DEFAULT_CONFIG } from '../../shared/config/local-default.js';
import type { SpanLine } from '../../shared/telemetry/file-exporter.js';
import { eventually } from '../support/eventually.js';
import { startLocalStack, type RunningStack } from './stack.js';

const PROXY = 'traced-1';
const TRACE_ID = randomBytes(16).toString('hex');
const PUBLISHER_SPAN = randomBytes(8).toString('hex');
const dir = mkdtempSync(join(tmpdir(), 'egress-e2e-trace-'));
const configFile = join(dir, 'egress.yaml');
let stack: RunningStack;
/** Where each log file stood when the test began: only what follows was written during it. */
const startOffsets = new Map<string, number>();

const logFiles = () =>
  readdirSync(join(stack.home, 'logs'))
    .filter((f) => f.startsWith('function-') || f === 'relay.log')
    .map((f) => join(stack.home, 'logs', f));
const spansOfTrace = () => readSpanFile(join(stack.home, 'telemetry', 'spans.jsonl')).spans.filter(inTrace);
const inTrace = (s: SpanLine) => s.traceId === TRACE_ID;

/** Every file under `root` (the stack's logs, telemetry and the relay's per-proxy logs). */
function filesUnder(root: string): string[] {
  return readdirSync(root, { withFileTypes: true }).flatMap((e) => {
    const path = join(root, e.name);
    return e.isDirectory() ? filesUnder(path) : [path];
  });
}

beforeAll(async () => {
  // No sweeps during the test: Ready must be reached by the kicks and redeliveries of this trace.
  writeFileSync(configFile, stringify({ ...LOCAL_DEFAULT_CONFIG, checkIntervalSeconds: 3600 }));
  stack = await startLocalStack({ EGRESS_PORT_OFFSET: '1200', EGRESS_SAMPLES: 'none', EGRESS_CONFIG: configFile });
});

afterAll(async () => {
  if (stack && stack.process.exitCode === null) await stack.interrupt();
});

describe('e2e: one request, one trace', () => {
  it('an apply published with a traceparent reaches Ready in that one trace, through every hop and the relay', async () => {
    // Settled first: the relay has reported and the health monitor found the provider healthy (a
    // proxy checked while its provider is down waits for the next sweep, and sweeps are off here).
    await eventually(
      async () => expect((await stack.db.collection('providers').doc('local').get()).get('status')).toBe('Healthy'),
      60_000,
      500,
    );
    for (const file of logFiles()) startOffsets.set(file, statSync(file).size);
    const request = { apiVersion: 'egress.dev/v1', kind: 'Proxy', action: 'apply', metadata: { name: PROXY } };
    await stack.pubsub.topic('proxy-requests').publishMessage({
      json: { ...request, spec: { provider: 'local' } },
      attributes: { action: 'apply', traceparent: `00-${TRACE_ID}-${PUBLISHER_SPAN}-01` },
    });
    await eventually(
      async () => expect((await stack.db.collection('proxies').doc(PROXY).get()).get('status.phase')).toBe('Ready'),
      60_000,
      500,
    );

    // Ready was decided in this trace, and (once the spans still open have ended) the trace is one
    // tree: every span's parent is in it, or is the publisher's span.
    const spans = await eventually(() => {
      const found = spansOfTrace();
      expect(found.some((s) => s.name === 'reconcile' && s.attributes['proxy.phase'] === 'Ready')).toBe(true);
      const ids = new Set([...found.map((s) => s.spanId), PUBLISHER_SPAN]);
      expect(found.filter((s) => !s.parentSpanId || !ids.has(s.parentSpanId)).map((s) => s.name)).toEqual([]);
      return found;
    }, 15_000);
    const names = (service: string) => spans.filter((s) => s.service === service).map((s) => s.name);
    // Every hop: publisher → requests (records, reconciles: relay-commands) → relay → relay-reports →
    // relay-report (stores the report, reconciles: Ready). No hop through the check function.
    expect(names('egress-requests')).toContain('process proxy-requests');
    expect(names('egress-requests')).toContain('send relay-commands');
    expect(names('egress-requests')).toContain('reconcile');
    expect(names('egress-relay')).toContain('process relay-commands');
    expect(names('egress-relay')).toContain('send relay-reports');
    expect(names('egress-relay-report')).toContain('process relay-reports');
    const ready = spans.find((s) => s.name === 'reconcile' && s.attributes['proxy.phase'] === 'Ready');
    expect(ready?.service).toBe('egress-relay-report');
    expect(names('egress-check')).toEqual([]);

    // The provider operation, its backend calls, the relay's backend call, the probe.
    const create = spans.find((s) => s.name === 'provider.create');
    expect(create?.attributes).toMatchObject({ 'provider.name': 'local', 'provider.outcome': 'ok' });
    const underCreate = spans.filter((s) => s.parentSpanId === create?.spanId).map((s) => s.name);
    expect(underCreate).toEqual(expect.arrayContaining(['firestore.set relays/local/commands', 'send relay-commands']));
    const execute = spans.find((s) => s.name === 'backend.create');
    expect(spans.find((s) => s.name === 'process.spawn')?.parentSpanId).toBe(execute?.spanId);
    expect(spans.some((s) => s.name === 'probe' && s.service === 'egress-relay')).toBe(true);

    expect(spans.find((s) => s.name === 'process proxy-requests')?.parentSpanId).toBe(PUBLISHER_SPAN);

    // Messaging semantic conventions on the invocation spans.
    for (const s of spans.filter((x) => x.name.startsWith('process '))) {
      expect(s.attributes).toMatchObject({ 'messaging.system': 'gcp_pubsub', 'messaging.operation.type': 'process' });
      expect(s.attributes['messaging.message.id']).toEqual(expect.any(String));
      expect(s.attributes['messaging.destination.name']).toBe(s.name.slice('process '.length));
    }
  });

  it('every line our processes wrote during the test is Cloud Logging JSON with a trace, and lines about this apply carry its trace', () => {
    const lines = logFiles().flatMap((file) =>
      readFileSync(file)
        .subarray(startOffsets.get(file) ?? 0)
        .toString('utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((text) => ({ file, text })),
    );
    expect(lines.length).toBeGreaterThan(0);
    const notJson = lines.filter((l) => {
      try {
        JSON.parse(l.text);
        return false;
      } catch {
        return true;
      }
    });
    expect(notJson).toEqual([]);
    const parsed = lines.map((l) => ({ ...l, json: z.record(z.string(), z.unknown()).parse(JSON.parse(l.text)) }));
    for (const { json } of parsed) {
      expect(typeof json['severity']).toBe('string');
      expect(typeof json['message']).toBe('string');
      expect(json['logging.googleapis.com/trace']).toMatch(/^projects\/demo-egress\/traces\/[0-9a-f]{32}$/);
    }
    // The relay's periodic report is a trace of its own (a root `relay.report` carrying no command
    // result); it can be the first to show the new instance Ready ("proxy is ready" under that
    // trace, seen in a CI run). Its lines are the relay's observation, not this apply's messages.
    const periodic = new Set(
      readSpanFile(join(stack.home, 'telemetry', 'spans.jsonl'))
        .spans.filter((x) => x.name === 'relay.report' && !x.parentSpanId && x.attributes['relay.report.results'] === 0)
        .map((x) => `projects/demo-egress/traces/${x.traceId}`),
    );
    const aboutThisApply = parsed.filter(
      (l) => l.text.includes(PROXY) && !periodic.has(String(l.json['logging.googleapis.com/trace'])),
    );
    expect(aboutThisApply.length).toBeGreaterThan(0);
    for (const { json } of aboutThisApply) {
      expect(json['logging.googleapis.com/trace']).toBe(`projects/demo-egress/traces/${TRACE_ID}`);
    }
  });

  it("no output of the stack (logs, spans, metrics, the launcher's own) contains the proxy's credentials", async () => {
    const creds = (await stack.db.collection('credentials').doc(PROXY).get()).data();
    const password = String(creds?.['password'] ?? '');
    const username = String(creds?.['username'] ?? '');
    expect(password.length).toBeGreaterThan(8);
    const basic = Buffer.from(`${username}:${password}`).toString('base64');
    // State files (relay-state/*.json) hold credentials by design (mode 0600); everything else is output.
    const outputs = filesUnder(stack.home).filter((f) => /\.(log|jsonl)$/.test(f));
    expect(outputs.some((f) => f.endsWith('spans.jsonl'))).toBe(true);
    const leaks = [
      ...outputs.map((f) => ({ f, text: readFileSync(f, 'utf8') })),
      { f: 'launcher', text: stack.output() },
    ]
      .filter(({ text }) => text.includes(password) || text.includes(basic))
      .map(({ f }) => f);
    expect(leaks).toEqual([]);
  });
});
