/** `--wait`: polls the API until every proxy is Ready (or gone), showing progress; fails on Failed or timeout. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApplyRequest } from '../shared/domain/proxy.js';
import { ApiError } from '../shared/api/api-error.js';
import type { ApiClient } from './api-client.js';
import type { ApiCondition, ApiProxy } from '../shared/api/schema.js';
import { humanDuration } from './format.js';

/** Where progress goes: stdout, with whether it is a terminal and how wide. */
export interface ProgressOutput {
  write(text: string): void;
  /** Clears the terminal's current line (the only control sequence the CLI writes; see printable.ts). */
  clearLine?(): void;
  isTTY: boolean;
  columns?: number | undefined;
}

/** What one proxy is waited for: Ready with this spec and labels, or gone. */
export type WaitTarget =
  { name: string; until: 'ready'; request: ApplyRequest } | { name: string; until: 'gone'; request?: undefined };

/** The wait did not succeed; the message says which proxy and why (its last condition). */
export class WaitError extends Error {
  override readonly name = 'WaitError';
}

/** How long to wait and how often to look. */
export interface WaitOptions {
  timeoutMs: number;
  intervalMs?: number;
  signal?: AbortSignal | undefined;
  now?: () => number;
}

interface State {
  /** A short state for the progress line (`Provisioning`, `not recorded yet`, `gone`). */
  state: string;
  done: boolean;
  /** Why it is not done yet (the last condition's message). */
  why?: string | undefined;
  failed?: boolean;
}

/** Key order does not matter when comparing what was applied with what is stored. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );
}

/** The reconciler's own conditions; others (such as an egress-IP warning) explain less about progress. */
const CORE_CONDITIONS = new Set(['Provisioned', 'Healthy', 'Ready']);

/**
 * The condition that explains the state best: the newest core condition that is not True, else
 * the newest other one that is not True, else the newest.
 *
 * @returns `Reason: message`, or undefined without conditions
 */
export function lastConditionMessage(conditions: readonly ApiCondition[]): string | undefined {
  const newest = (cs: readonly ApiCondition[]) =>
    [...cs].sort((a, b) => (a.lastTransitionTime ?? '').localeCompare(b.lastTransitionTime ?? '')).at(-1);
  const notTrue = conditions.filter((x) => x.status !== 'True');
  const c = newest(notTrue.filter((x) => CORE_CONDITIONS.has(x.type))) ?? newest(notTrue) ?? newest(conditions);
  if (!c) return undefined;
  return [c.reason, c.message].filter(Boolean).join(': ') || `${c.type}=${c.status}`;
}

/**
 * Whether `proxy` shows the applied request done: the stored spec and labels are the applied ones
 * (the apply went through the queue), it is Ready, and — when the API says — for this generation.
 */
export function readiness(proxy: ApiProxy | undefined, request: ApplyRequest, stoppedBefore?: number): State {
  if (!proxy) return { state: 'not recorded yet', done: false };
  const why = lastConditionMessage(proxy.status.conditions);
  const applied =
    canonical(proxy.spec) === canonical(request.spec) &&
    canonical(proxy.metadata.labels) === canonical(request.metadata.labels) &&
    !proxy.metadata.deletionRequestedAt;
  if (!applied) return { state: 'apply not recorded yet', done: false };
  const phase = proxy.status.phase;
  // Applying a stopped proxy again resumes it by moving its generation: until that apply is
  // recorded, the stop the wait began with is not this apply's failure.
  if (phase === 'Failed' && stoppedBefore !== undefined && proxy.metadata.generation === stoppedBefore)
    return { state: 'apply not recorded yet', done: false, why };
  if (phase === 'Failed') return { state: phase, done: false, failed: true, why };
  const observed = proxy.status.observedGeneration;
  const current =
    observed === undefined || proxy.metadata.generation === undefined || observed >= proxy.metadata.generation;
  return { state: phase, done: phase === 'Ready' && current, why };
}

/** The generation creation stopped for, when it is the proxy's current one (`status.unreachable`). */
function stoppedAt(proxy: ApiProxy | undefined): number | undefined {
  const stop = proxy?.status.unreachable;
  return stop?.stopped && stop.generation === proxy?.metadata.generation ? stop.generation : undefined;
}

function gone(proxy: ApiProxy | undefined): State {
  if (!proxy) return { state: 'gone', done: true };
  if (!proxy.metadata.deletionRequestedAt) return { state: 'deletion not recorded yet', done: false };
  return { state: proxy.status.phase, done: false, why: lastConditionMessage(proxy.status.conditions) };
}

/** Prints progress: one updating line on a terminal, a plain line per change otherwise. */
function progressPrinter(out: ProgressOutput) {
  const last = new Map<string, string>();
  let lineShown = false;
  return {
    update(states: Map<string, State>, elapsedMs: number) {
      if (out.isTTY) {
        const summary = [...states].map(([name, s]) => `${name} ${s.state}`).join(', ');
        let line = `waiting (${humanDuration(elapsedMs)}): ${summary}`;
        const width = (out.columns || 80) - 1;
        if (line.length > width) line = `${line.slice(0, Math.max(0, width - 1))}…`;
        out.clearLine?.();
        out.write(line);
        lineShown = true;
        return;
      }
      for (const [name, s] of states) {
        if (last.get(name) === s.state) continue;
        last.set(name, s.state);
        out.write(`proxy/${name} ${s.state}${s.done ? '' : s.why ? ` (${s.why})` : ''}\n`);
      }
    },
    /** Ends the updating line and prints the final state of each proxy. */
    finish(states: Map<string, State>) {
      if (!out.isTTY) return;
      if (lineShown) out.clearLine?.();
      for (const [name, s] of states) out.write(`proxy/${name} ${s.state}\n`);
    },
  };
}

/**
 * Polls every target until all are done.
 *
 * @returns when every proxy is Ready (or gone)
 * @throws WaitError with the last condition's message on timeout or when a proxy reaches Failed
 * @throws ApiError on an error that waiting will not cure (401, 400…); transient ones are retried
 */
export async function waitFor(
  client: ApiClient,
  targets: readonly WaitTarget[],
  out: ProgressOutput,
  opts: WaitOptions,
): Promise<void> {
  const now = opts.now ?? Date.now;
  const started = now();
  const interval = opts.intervalMs ?? 1000;
  const states = new Map<string, State>(targets.map((t) => [t.name, { state: 'waiting', done: false }]));
  /** The generation each proxy was stopped at when first seen (`stoppedAt`). */
  const stoppedBefore = new Map<string, number | undefined>();
  const printer = progressPrinter(out);
  try {
    for (;;) {
      for (const t of targets) {
        if (states.get(t.name)?.done && t.until === 'gone') continue;
        try {
          const proxy = await client.getProxy(t.name);
          if (!stoppedBefore.has(t.name)) stoppedBefore.set(t.name, stoppedAt(proxy));
          states.set(
            t.name,
            t.until === 'ready' ? readiness(proxy, t.request, stoppedBefore.get(t.name)) : gone(proxy),
          );
        } catch (err) {
          if (!(err instanceof ApiError) || !err.transient) throw err;
          const previous = states.get(t.name);
          states.set(t.name, { state: previous?.state ?? 'waiting', done: false, why: err.message });
        }
      }
      printer.update(states, now() - started);
      const failed = [...states].find(([, s]) => s.failed);
      if (failed) throw new WaitError(`proxy/${failed[0]} is Failed: ${failed[1].why ?? 'no condition recorded'}`);
      if ([...states.values()].every((s) => s.done)) return;
      if (now() - started >= opts.timeoutMs) {
        const pending = [...states].filter(([, s]) => !s.done);
        const detail = pending.map(([name, s]) => `proxy/${name} ${s.state}${s.why ? ` (${s.why})` : ''}`).join('; ');
        const limit = opts.timeoutMs < 1000 ? `${opts.timeoutMs}ms` : humanDuration(opts.timeoutMs);
        throw new WaitError(`timed out after ${limit}: ${detail}`);
      }
      await sleep(Math.min(interval, Math.max(0, opts.timeoutMs - (now() - started))), undefined, {
        signal: opts.signal,
      });
    }
  } finally {
    printer.finish(states);
  }
}
