/**
 * The functions' bus: Pub/Sub's REST `topics.publish` over `fetch` with Application Default
 * Credentials, instead of the client library (whose gRPC stack is most of a cold start). The
 * emulator speaks the same REST API. Messages published within 5 ms go out as one request.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { GoogleAuth } from 'google-auth-library';
import { z } from 'zod';
import { createBus, type Bus } from './pubsub.js';

export interface RestBusOptions {
  project: string;
  /** `host:port` of the Pub/Sub emulator (`PUBSUB_EMULATOR_HOST`): plain HTTP, no credentials. */
  emulatorHost?: string | undefined;
  /** Credentials for a request to Google; default Application Default Credentials. */
  authHeaders?: (url: string) => Promise<Headers>;
}

/** Pub/Sub's limits per publish request are 1,000 messages and 10 MB; stay well inside them. */
const MAX_BATCH_MESSAGES = 100;
const MAX_BATCH_BYTES = 4 * 1024 * 1024;
const BATCH_MS = 5;
/** Statuses worth another try (the client library retries the same ones). */
const RETRY_STATUSES = new Set([409, 429, 500, 502, 503, 504]);
const RETRY_DELAYS_MS = [100, 400, 1600];

const publishResponse = z.object({ messageIds: z.array(z.string()) });

interface Pending {
  message: { data: string; attributes: Record<string, string> };
  resolve: (id: string) => void;
  reject: (err: unknown) => void;
}

interface Batch {
  items: Pending[];
  bytes: number;
}

type HeadersFor = (url: string) => Promise<Headers>;

/** The emulator takes no credentials; Google takes Application Default Credentials unless the caller gives its own. */
function headersFor(options: RestBusOptions): HeadersFor {
  if (options.authHeaders) return options.authHeaders;
  if (options.emulatorHost) return () => Promise.resolve(new Headers());
  // The auth library is loaded on the first publish to Google, never for the emulator.
  let auth: Promise<GoogleAuth> | undefined;
  return async (url) => {
    auth ??= import('google-auth-library').then(
      (m) => new m.GoogleAuth({ scopes: 'https://www.googleapis.com/auth/pubsub' }),
    );
    return (await auth).getRequestHeaders(url);
  };
}

/** One `topics.publish` request for a batch, retried on the statuses the client library retries. */
async function post(url: string, topic: string, items: Pending[], headersOf: HeadersFor): Promise<string[]> {
  const body = JSON.stringify({ messages: items.map((i) => i.message) });
  for (let attempt = 0; ; attempt++) {
    const headers = await headersOf(url);
    headers.set('content-type', 'application/json');
    const retryIn = RETRY_DELAYS_MS[attempt];
    let res: Response;
    try {
      res = await fetch(url, { method: 'POST', headers, body });
    } catch (err) {
      if (retryIn === undefined) throw new Error(`publish to ${topic}: ${(err as Error).message}`, { cause: err });
      await sleep(retryIn);
      continue;
    }
    const text = await res.text();
    if (res.ok) {
      const ids = publishResponse.safeParse(JSON.parse(text));
      if (!ids.success || ids.data.messageIds.length !== items.length)
        throw new Error(`publish to ${topic}: the response has no messageIds for ${items.length} message(s)`);
      return ids.data.messageIds;
    }
    if (!RETRY_STATUSES.has(res.status) || retryIn === undefined)
      throw new Error(`publish to ${topic}: HTTP ${res.status} ${text.slice(0, 300)}`);
    await sleep(retryIn);
  }
}

/**
 * @example
 * const bus = createRestBus({ project: config.project, emulatorHost: env['PUBSUB_EMULATOR_HOST'] });
 */
export function createRestBus(options: RestBusOptions): Bus {
  const base = options.emulatorHost ? `http://${options.emulatorHost}` : 'https://pubsub.googleapis.com';
  const headersOf = headersFor(options);
  const open = new Map<string, Batch>();

  function flush(topic: string, batch: Batch): void {
    if (open.get(topic) === batch) open.delete(topic);
    const url = `${base}/v1/projects/${options.project}/topics/${topic}:publish`;
    post(url, topic, batch.items, headersOf).then(
      (ids) => batch.items.forEach((item, i) => item.resolve(ids[i] ?? '')),
      (err: unknown) => batch.items.forEach((item) => item.reject(err)),
    );
  }

  return createBus(
    (topic, data, attributes) =>
      new Promise<string>((resolve, reject) => {
        const message = { data: data.toString('base64'), attributes };
        const bytes = message.data.length + JSON.stringify(attributes).length;
        let batch = open.get(topic);
        if (batch && batch.bytes + bytes > MAX_BATCH_BYTES) flush(topic, batch);
        batch = open.get(topic);
        if (!batch) {
          const created: Batch = { items: [], bytes: 0 };
          open.set(topic, created);
          setTimeout(() => open.get(topic) === created && flush(topic, created), BATCH_MS);
          batch = created;
        }
        batch.items.push({ message, resolve, reject });
        batch.bytes += bytes;
        if (batch.items.length >= MAX_BATCH_MESSAGES) flush(topic, batch);
      }),
  );
}
