/**
 * A wire-level fake of the HTTP API (docs/api.md) on a real local port, for testing clients such as
 * the CLI. Its shapes are the API's answer schemas (shared/api/schema.ts), and every answer is
 * parsed with them before it is sent.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { parseProxyRequest } from '../../shared/domain/proxy.js';
import { reportRequestSchema } from '../../shared/domain/reports.js';
import { ValidationError } from '../../shared/errors.js';
import {
  acceptedSchema,
  apiErrorBodySchema,
  discoveryListSchema,
  providerListSchema,
  proxyListSchema,
  proxyWithEventsSchema,
  relayListSchema,
  reportAcceptedSchema,
  type ApiEvent,
  type ApiProxy,
} from '../../shared/api/schema.js';

type Json = Record<string, unknown>;

/** A Proxy object as the API shows it (shared/api/schema.ts). */
export type FakeProxy = ApiProxy;

/** An entry of a proxy's events, newest first as the API answers them. */
export type FakeEvent = ApiEvent & { type: 'Normal' | 'Warning' };

/** The token the fake accepts and how its proxies behave. */
export interface FakeApiOptions {
  token: string;
  /** Phases a proxy walks through after an apply, one per `step()`; default Pending → Provisioning → Ready. */
  lifecycle?: (name: string) => string[];
  providers?: Json[];
}

/** The running fake: its URL, its state (to inspect or seed) and its controls. */
export interface FakeApi {
  url: string;
  proxies: Map<string, FakeProxy>;
  events: Map<string, FakeEvent[]>;
  /** Reports received, by proxy (the validated bodies). */
  reports: Map<string, Json[]>;
  /** Every request received: method, path with query, and whether it carried the right token. */
  requests: { method: string; url: string; authorized: boolean }[];
  /** Processes the published messages, then moves every proxy one step along its lifecycle. */
  step(): void;
  /** Calls `step()` every `ms` until closed. */
  autoStep(ms: number): void;
  close(): Promise<void>;
}

const iso = () => new Date().toISOString();

function conditionsFor(phase: string, at: string): FakeProxy['status']['conditions'] {
  const c = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastTransitionTime: at,
  });
  if (phase === 'Ready')
    return [
      c('Provisioned', 'True', 'Created', 'instance is running'),
      c('Healthy', 'True', 'ProbeSucceeded', 'probe succeeded'),
      c('Ready', 'True', 'Ready', 'serving'),
    ];
  if (phase === 'Failed') return [c('Provisioned', 'False', 'PermanentError', 'spec.placement.zone: no such zone')];
  return [c('Provisioned', 'False', 'Creating', `instance is ${phase.toLowerCase()}`)];
}

/**
 * Starts the fake on 127.0.0.1 (a free port).
 *
 * @returns the running fake; `close()` stops it
 */
export async function startFakeApi(opts: FakeApiOptions): Promise<FakeApi> {
  const proxies = new Map<string, FakeProxy>();
  const events = new Map<string, FakeEvent[]>();
  const progress = new Map<string, string[]>();
  const queue: (
    { action: 'apply'; body: ReturnType<typeof parseProxyRequest> } | { action: 'delete'; name: string }
  )[] = [];
  const requests: FakeApi['requests'] = [];
  const reports: FakeApi['reports'] = new Map();
  const lifecycle = opts.lifecycle ?? (() => ['Pending', 'Provisioning', 'Ready']);
  let port = 20000;

  const event = (name: string, type: FakeEvent['type'], reason: string, message: string) =>
    events.set(name, [{ at: iso(), type, reason, message }, ...(events.get(name) ?? [])]);

  const setPhase = (p: FakeProxy, phase: string) => {
    const at = iso();
    p.status = { phase, conditions: conditionsFor(phase, at) };
    if (phase === 'Ready' || phase === 'Unhealthy') {
      const address = `127.0.0.1:${port++}`;
      p.status.address = address;
      p.status.instance = {
        name: `ep-${p.metadata.name}`,
        ip: '127.0.0.1',
        port: port - 1,
        state: 'Running',
        createdAt: at,
      };
      p.status.health = {
        ok: phase === 'Ready',
        latencyMs: 12,
        egressIp: '127.0.0.1',
        lastProbeAt: at,
        consecutiveFailures: 0,
      };
    }
    event(p.metadata.name, phase === 'Failed' ? 'Warning' : 'Normal', phase, `phase is now ${phase}`);
  };

  const step = () => {
    const fresh = new Set<string>();
    for (const m of queue.splice(0)) {
      fresh.add(m.action === 'delete' ? m.name : m.body.metadata.name);
      if (m.action === 'delete') {
        const p = proxies.get(m.name);
        if (p) p.metadata.deletionRequestedAt = iso();
        if (p) setPhase(p, 'Deleting');
        progress.set(m.name, ['gone']);
        continue;
      }
      if (m.body.action !== 'apply') continue;
      const { metadata, spec } = m.body;
      const existing = proxies.get(metadata.name);
      const p: FakeProxy = {
        apiVersion: 'egress.dev/v1',
        kind: 'Proxy',
        metadata: {
          name: metadata.name,
          labels: metadata.labels,
          generation: (existing?.metadata.generation ?? 0) + 1,
          createdAt: existing?.metadata.createdAt ?? iso(),
        },
        spec,
        status: { phase: 'Pending', conditions: [] },
      };
      proxies.set(metadata.name, p);
      const [first, ...rest] = lifecycle(metadata.name);
      setPhase(p, first ?? 'Pending');
      progress.set(metadata.name, rest);
    }
    for (const [name, next] of progress) {
      if (fresh.has(name)) continue;
      const p = proxies.get(name);
      const phase = next.shift();
      if (next.length === 0) progress.delete(name);
      if (!p || phase === undefined) continue;
      if (phase === 'gone') {
        proxies.delete(name);
        events.delete(name);
      } else setPhase(p, phase);
    }
  };

  /** Every answer is checked against the API's answer schema first: the fake cannot drift from it. */
  const send = (res: ServerResponse, status: number, schema: z.ZodType, body: unknown) => {
    schema.parse(body);
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const error = (res: ServerResponse, status: number, code: string, message: string, field?: string) =>
    send(res, status, apiErrorBodySchema, { error: { code, message, ...(field && { field }) } });

  const readBody = (req: IncomingMessage) =>
    new Promise<string>((resolve, reject) => {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => resolve(text));
      req.on('error', reject);
    });

  const matches = (p: FakeProxy, labels: string[]) =>
    labels.every((l) => p.metadata.labels[l.slice(0, l.indexOf('='))] === l.slice(l.indexOf('=') + 1));

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const authorized = req.headers.authorization === `Bearer ${opts.token}`;
    requests.push({ method: req.method ?? '', url: `${url.pathname}${url.search}`, authorized });
    if (req.method === 'GET' && url.pathname === '/healthz')
      return send(res, 200, z.object({ ok: z.literal(true) }), { ok: true });
    if (!authorized) return error(res, 401, 'Unauthorized', 'missing or invalid bearer token');
    const q = url.searchParams;
    const one = /^\/v1\/proxies\/([^/]+)$/.exec(url.pathname);
    const name = one ? decodeURIComponent(one[1] ?? '') : '';

    if (req.method === 'GET' && url.pathname === '/v1/proxies') {
      const items = [...proxies.values()]
        .filter((p) => (!q.get('phase') || p.status.phase === q.get('phase')) && matches(p, q.getAll('label')))
        .filter((p) => !q.get('provider') || p.spec.provider === q.get('provider'))
        .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
      return send(res, 200, proxyListSchema, { items });
    }
    if (req.method === 'GET' && one) {
      const p = proxies.get(name);
      if (!p) return error(res, 404, 'NotFound', `proxy "${name}" not found`);
      return send(res, 200, proxyWithEventsSchema, { ...p, events: events.get(name) ?? [] });
    }
    if (req.method === 'PUT' && one) {
      let body: unknown;
      try {
        body = JSON.parse(await readBody(req));
      } catch {
        return error(res, 400, 'Validation', 'body must be JSON', '(body)');
      }
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        return error(res, 400, 'Validation', 'must be a JSON object', '(body)');
      const meta: unknown = 'metadata' in body ? body.metadata : undefined;
      const metaObject = typeof meta === 'object' && meta !== null ? meta : {};
      if ('name' in metaObject && metaObject.name !== name)
        return error(res, 400, 'Validation', `must equal the name in the path ("${name}")`, 'metadata.name');
      if ('action' in body) return error(res, 400, 'Validation', 'unrecognized key "action"', 'action');
      try {
        const request = parseProxyRequest({ ...body, action: 'apply', metadata: { ...metaObject, name } });
        const existing = proxies.get(name);
        if (request.action === 'apply' && existing && existing.spec.provider !== request.spec.provider)
          return error(res, 409, 'Conflict', 'spec.provider is immutable', 'spec.provider');
        queue.push({ action: 'apply', body: request });
      } catch (err) {
        if (err instanceof ValidationError) return error(res, 400, 'Validation', err.message, err.field);
        throw err;
      }
      return send(res, 202, acceptedSchema, { accepted: true, name, messageId: randomUUID() });
    }
    const reportsOf = /^\/v1\/proxies\/([^/]+)\/reports$/.exec(url.pathname);
    if (req.method === 'POST' && reportsOf) {
      const target = decodeURIComponent(reportsOf[1] ?? '');
      const parsed = reportRequestSchema.safeParse(JSON.parse((await readBody(req)) || 'null'));
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        return error(res, 400, 'Validation', issue?.message ?? 'invalid', issue?.path.join('.') || '(body)');
      }
      if (!proxies.has(target)) return error(res, 404, 'NotFound', `proxy "${target}" not found`);
      reports.set(target, [...(reports.get(target) ?? []), parsed.data]);
      const banned = parsed.data.reason === 'banned' && parsed.data.target === undefined;
      return send(res, 202, reportAcceptedSchema, {
        accepted: true,
        name: target,
        duplicate: false,
        banned,
        stale: false,
      });
    }
    if (req.method === 'DELETE' && one) {
      if (!proxies.has(name)) return error(res, 404, 'NotFound', `proxy "${name}" not found`);
      queue.push({ action: 'delete', name });
      return send(res, 202, acceptedSchema, { accepted: true, name, messageId: randomUUID() });
    }
    if (req.method === 'GET' && url.pathname === '/v1/discovery') {
      let ready = [...proxies.values()]
        .filter((p) => p.status.phase === 'Ready' && matches(p, q.getAll('label')))
        .filter((p) => !q.get('provider') || p.spec.provider === q.get('provider'))
        .filter((p) => !q.get('maxLatencyMs') || (p.status.health?.latencyMs ?? 0) <= Number(q.get('maxLatencyMs')))
        .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
      if (q.get('distinct') === 'true')
        ready = ready.filter(
          (p, i) => ready.findIndex((o) => o.status.health?.egressIp === p.status.health?.egressIp) === i,
        );
      if (q.get('order') === 'random') ready.reverse();
      if (q.get('limit')) ready = ready.slice(0, Number(q.get('limit')));
      const items = ready.map((p) => ({
        name: p.metadata.name,
        provider: p.spec.provider,
        url: `http://u-${p.metadata.name}:secret@${p.status.address ?? ''}`,
        egressIp: p.status.health?.egressIp,
        latencyMs: p.status.health?.latencyMs,
      }));
      if (q.get('format') === 'urls') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end(items.map((i) => `${i.url}\n`).join(''));
        return;
      }
      return send(res, 200, discoveryListSchema, items);
    }
    if (req.method === 'GET' && url.pathname === '/v1/providers')
      return send(res, 200, providerListSchema, { items: opts.providers ?? [] });
    if (req.method === 'GET' && url.pathname === '/v1/relays') return send(res, 200, relayListSchema, { items: [] });
    return error(res, 404, 'NotFound', `no route ${req.method ?? ''} ${url.pathname}`);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => error(res, 500, 'Internal', String(err)));
  });
  let timer: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: listening } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${listening}`,
    proxies,
    events,
    reports,
    requests,
    step,
    autoStep(ms) {
      timer = setInterval(step, ms);
    },
    async close() {
      clearInterval(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
