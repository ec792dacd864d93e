/**
 * The pieces of the demand bench on the local stack: a target that answers after a delay (so a
 * client's request stays in flight), client loops through the gateway that follow a demand trace,
 * and clocks on Firestore listeners: each pool member's life (created, Ready, gone) and each
 * pool's desired and Ready counts over time.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Firestore } from '@google-cloud/firestore';
import { z } from 'zod';
import { POOL_LABEL } from '../shared/domain/names.js';

/** One phase of a trace: this many requests kept in flight for this long. */
export interface Phase {
  name: string;
  seconds: number;
  concurrency: number;
}

/** How a trace's requests were answered. */
export interface Answers {
  /** 200: served through a member. */
  served: number;
  /** 503 within the wake timeout: refused in time, not lost. */
  refused: number;
  /** Anything else: another status, an error, no answer within the timeout. */
  lost: number;
  /** A few of the lost ones, for the report. */
  samples: string[];
}

/** The phase at `ms` after the trace's start, or undefined once it is over. */
export function phaseAt(phases: readonly Phase[], ms: number): Phase | undefined {
  let end = 0;
  for (const p of phases) {
    end += p.seconds * 1000;
    if (ms < end) return p;
  }
  return undefined;
}

/** When `phase` starts, in ms after the trace's start. */
export function phaseStart(phases: readonly Phase[], name: string): number {
  let start = 0;
  for (const p of phases) {
    if (p.name === name) return start;
    start += p.seconds * 1000;
  }
  throw new Error(`no phase ${name}`);
}

/** A target that answers `ok` after `?ms=` milliseconds: a request to it stays in flight that long. */
export async function startSlowTarget(): Promise<{ url: (ms: number) => string; close: () => Promise<void> }> {
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    const ms = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('ms') ?? 0);
    setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '3' }).end('ok\n'), ms);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (ms) => `http://127.0.0.1:${port}/?ms=${ms}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A gateway's address and the username that asks it for `pool` (`<user>-pool-<name>`). */
export interface PoolClient {
  host: string;
  port: number;
  authorization: string;
}

/** The client of `pool` through the gateway at `gatewayUrl` (`http://user:password@host:port`). */
export function poolClient(gatewayUrl: string, pool: string): PoolClient {
  const u = new URL(gatewayUrl);
  const user = `${decodeURIComponent(u.username)}-pool-${pool}`;
  const credentials = Buffer.from(`${user}:${decodeURIComponent(u.password)}`).toString('base64');
  return { host: u.hostname, port: Number(u.port), authorization: `Basic ${credentials}` };
}

/** GETs `url` through the gateway; resolves with the status (0: an error) once the answer ended, and when its first byte came. */
export function get(
  client: PoolClient,
  url: string,
  agent: http.Agent | undefined,
  timeoutMs: number,
): Promise<{ status: number; firstByteAt: number; error?: string }> {
  return new Promise((resolve) => {
    const req = http.request(
      {
        host: client.host,
        port: client.port,
        path: url,
        agent,
        headers: { 'proxy-authorization': client.authorization },
        timeout: timeoutMs,
      },
      (res) => {
        const firstByteAt = Date.now();
        const status = res.statusCode ?? 0;
        // A refusal's body says why (the gateway names the cause); an answer's is not kept.
        let text = '';
        res.on('data', (b: Buffer) => {
          if (status >= 400 && text.length < 300) text += b.toString();
        });
        res.once('end', () =>
          resolve({ status, firstByteAt, ...(text && { error: text.trim().split('\n')[0]?.slice(0, 200) }) }),
        );
      },
    );
    req.once('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.once('error', (err) => resolve({ status: 0, firstByteAt: Date.now(), error: err.message }));
    req.end();
  });
}

/**
 * Replays `phases` against `pool` from `startAt` (epoch ms): as many client loops as the phase's
 * concurrency each send one request after the other (each held `delayMs` by the target).
 */
export async function replay(
  client: PoolClient,
  target: (ms: number) => string,
  phases: readonly Phase[],
  startAt: number,
  opts: { delayMs: number; timeoutMs: number },
): Promise<Answers> {
  const loops = Math.max(...phases.map((p) => p.concurrency));
  const agent = new http.Agent({ keepAlive: true, maxSockets: loops });
  const answers: Answers = { served: 0, refused: 0, lost: 0, samples: [] };
  await Promise.all(
    Array.from({ length: loops }, async (_, i) => {
      for (;;) {
        const phase = phaseAt(phases, Date.now() - startAt);
        if (!phase) return;
        if (i >= phase.concurrency) {
          await sleep(100);
          continue;
        }
        const sent = Date.now();
        const r = await get(client, target(opts.delayMs), agent, opts.timeoutMs);
        if (r.status === 200) answers.served++;
        else if (r.status === 503 && Date.now() - sent <= opts.timeoutMs) answers.refused++;
        else {
          answers.lost++;
          if (answers.samples.length < 5) answers.samples.push(`${phase.name}: ${r.status} ${r.error ?? ''}`.trim());
        }
      }
    }),
  );
  agent.destroy();
  return answers;
}

/** One member's life as Firestore saw it (epoch ms). */
export interface MemberLife {
  name: string;
  pool: string;
  createdAt: number;
  readyAt?: number;
  goneAt?: number;
}

const memberSchema = z.object({
  metadata: z.object({ labels: z.record(z.string(), z.string()).default({}) }),
  status: z.object({ phase: z.string() }).optional(),
});

/** Every pool member's life, from a listener on `proxies` (stop it with `close`). */
export function watchMembers(db: Firestore): { lives: Map<string, MemberLife>; close: () => void } {
  const lives = new Map<string, MemberLife>();
  const close = db.collection('proxies').onSnapshot((snap) => {
    for (const change of snap.docChanges()) {
      const { doc } = change;
      const parsed = memberSchema.safeParse(doc.data());
      const pool = parsed.data?.metadata.labels[POOL_LABEL];
      if (!pool) continue;
      const life = lives.get(doc.id) ?? { name: doc.id, pool, createdAt: doc.createTime.toMillis() };
      lives.set(doc.id, life);
      if (change.type === 'removed') life.goneAt ??= snap.readTime.toMillis();
      else if (parsed.data?.status?.phase === 'Ready') life.readyAt ??= doc.updateTime.toMillis();
    }
  });
  return { lives, close };
}

/** The seconds `pool`'s members existed (created until gone) within [from, to] (epoch ms). */
export function memberSeconds(lives: Iterable<MemberLife>, pool: string, from: number, to: number): number {
  let ms = 0;
  for (const l of lives) {
    if (l.pool !== pool) continue;
    ms += Math.max(0, Math.min(l.goneAt ?? to, to) - Math.max(l.createdAt, from));
  }
  return ms / 1000;
}

/** A pool's desired and Ready member counts, each time its status changed. */
export interface PoolSample {
  at: number;
  desired: number;
  ready: number;
}

const poolStatusSchema = z.object({
  status: z.object({ desiredReplicas: z.number().default(0), readyReplicas: z.number().default(0) }),
});

/** The pool's status over time, from a listener on `pools/{name}`. */
export function watchPool(db: Firestore, name: string): { samples: PoolSample[]; close: () => void } {
  const samples: PoolSample[] = [];
  const close = db.doc(`pools/${name}`).onSnapshot((snap) => {
    const parsed = poolStatusSchema.safeParse(snap.data());
    if (!parsed.success || !snap.updateTime) return;
    const { desiredReplicas: desired, readyReplicas: ready } = parsed.data.status;
    samples.push({ at: snap.updateTime.toMillis(), desired, ready });
  });
  return { samples, close };
}

/** Ms from `from` until the first sample at or after it where `reached` holds; undefined if none. */
export function timeUntil(
  samples: readonly PoolSample[],
  from: number,
  reached: (s: PoolSample) => boolean,
): number | undefined {
  const hit = samples.find((s) => s.at >= from && reached(s));
  return hit ? hit.at - from : undefined;
}

/**
 * The autoscaler's reaction to the step at `from`, judged against its own decision rather than a
 * member count fixed in advance: the load generator's in-flight count is what the gateways report,
 * and on a loaded machine it falls short of the nominal 10× (8 of 10 in flight asks for 4 members,
 * not 5). `members` is the highest desired count the pool reached before `to`; `decidedMs` is when
 * the pool first asked for that many, `readyMs` when that many were Ready (undefined: not reached).
 */
export function stepReaction(
  samples: readonly PoolSample[],
  from: number,
  to: number,
): { members: number; decidedMs?: number; readyMs?: number } {
  const during = samples.filter((s) => s.at >= from && s.at < to);
  const members = Math.max(0, ...during.map((s) => s.desired));
  if (members === 0) return { members };
  const decidedMs = timeUntil(samples, from, (s) => s.desired >= members);
  const readyMs = timeUntil(samples, from, (s) => s.ready >= members);
  return {
    members,
    ...(decidedMs !== undefined && { decidedMs }),
    ...(readyMs !== undefined && { readyMs }),
  };
}
