/**
 * The end-state checks of `npm run chaos`, on the live stack after the faults stop: every proxy at
 * its last requested spec, Ready from an instance of that spec, with no lease, no document or credentials left of a deleted
 * one, and exactly one proxy process per live proxy (none leaked, none left of a delete).
 */
import type { Firestore } from '@google-cloud/firestore';
import { instanceName } from '../../shared/domain/names.js';
import { proxyDocSchema, type ProxyDoc } from '../../shared/domain/status.js';
import type { Wanted } from './churn.js';
import { proxyProcesses } from './faults.js';

const sameJson = (a: unknown, b: unknown) => JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.entries(v)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, x]) => [k, sortKeys(x)]),
    );
  return v;
}

/** What is wrong with one name's document against what was last asked of it. */
function docProblems(name: string, want: Wanted | null, doc: ProxyDoc | undefined, now: number): string[] {
  if (!want) return doc ? [`${name}: deleted, but its document remains (${doc.status.phase})`] : [];
  if (!doc) return [`${name}: applied, but it has no document`];
  const problems: string[] = [];
  const { labels, ...spec } = want;
  if (!sameJson(doc.spec, spec))
    problems.push(`${name}: spec ${JSON.stringify(doc.spec)}, want ${JSON.stringify(spec)}`);
  if (!sameJson(doc.metadata.labels, labels)) problems.push(`${name}: labels ${JSON.stringify(doc.metadata.labels)}`);
  if (doc.status.phase !== 'Ready') problems.push(`${name}: ${doc.status.phase}`);
  // Ready, but from an instance of an older spec (or one due for rotation) waiting for the rollout budget.
  const ready = doc.status.conditions.find((c) => c.type === 'Ready');
  if (ready?.reason === 'RolloutPending') problems.push(`${name}: Ready, rollout pending (${ready.message})`);
  if (doc.status.observedGeneration !== doc.generation)
    problems.push(`${name}: observed generation ${doc.status.observedGeneration} of ${doc.generation}`);
  if (doc.lease && doc.lease.until > now) problems.push(`${name}: lease held by ${doc.lease.holder}`);
  if (doc.deletionRequestedAt) problems.push(`${name}: deletion requested but the name is wanted`);
  return problems;
}

/** Every problem of the documents and credentials, now. */
export async function storeProblems(db: Firestore, wanted: ReadonlyMap<string, Wanted | null>): Promise<string[]> {
  const [proxies, credentials] = await Promise.all([
    db.collection('proxies').get(),
    db.collection('credentials').get(),
  ]);
  const docs = new Map(proxies.docs.map((d) => [d.id, proxyDocSchema.parse(d.data())]));
  const now = Date.now();
  const problems = [...wanted].flatMap(([name, want]) => docProblems(name, want, docs.get(name), now));
  for (const name of docs.keys()) if (!wanted.has(name)) problems.push(`${name}: a document nobody asked for`);
  for (const c of credentials.docs)
    if (!wanted.get(c.id)) problems.push(`${c.id}: credentials left of a proxy that is not wanted`);
  return problems;
}

/** Every problem of the proxy processes: exactly one per live proxy, none else. */
export function processProblems(
  home: string,
  installationId: string,
  wanted: ReadonlyMap<string, Wanted | null>,
): string[] {
  const counts = new Map<string, number>();
  for (const p of proxyProcesses(home)) counts.set(p.name, (counts.get(p.name) ?? 0) + 1);
  const problems: string[] = [];
  for (const [name, want] of wanted) {
    const instance = instanceName(installationId, name);
    const n = counts.get(instance) ?? 0;
    counts.delete(instance);
    if (n !== (want ? 1 : 0)) problems.push(`${name}: ${n} proxy processes, want ${want ? 1 : 0}`);
  }
  for (const [instance, n] of counts) problems.push(`${instance}: ${n} proxy processes of no wanted proxy (leaked)`);
  return problems;
}

/**
 * Polls until both checks find nothing (at most `timeoutMs`, or with `stallMs` for as long as some
 * name settled within the last `stallMs`), then confirms once more a few seconds later that
 * nothing moved.
 *
 * @returns the time it took, or the problems still seen at the deadline; and per wanted name, when
 *   it was first seen without a problem and stayed so (absent: never settled)
 */
export async function settle(
  db: Firestore,
  home: string,
  installationId: string,
  wanted: ReadonlyMap<string, Wanted | null>,
  timeoutMs: number,
  stallMs?: number,
): Promise<{ ms: number; problems: string[]; settledAt: Map<string, number> }> {
  const started = Date.now();
  const settledAt = new Map<string, number>();
  let problems: string[] = [];
  // With `stallMs`, the wait goes on past `timeoutMs` while names keep settling.
  let progressAt = started;
  for (let clean = 0; clean < 2;) {
    problems = [
      ...(await storeProblems(db, wanted).catch((err: unknown) => [`reading the store: ${String(err)}`])),
      ...processProblems(home, installationId, wanted),
    ];
    const now = Date.now();
    // Every problem line starts with the name it is about.
    const troubled = new Set(problems.map((p) => p.split(':')[0] ?? ''));
    for (const name of wanted.keys()) {
      if (troubled.has(name)) settledAt.delete(name);
      else if (!settledAt.has(name)) {
        settledAt.set(name, now);
        progressAt = now;
      }
    }
    clean = problems.length === 0 ? clean + 1 : 0;
    const stalled = stallMs === undefined || Date.now() - progressAt > stallMs;
    if (Date.now() - started > timeoutMs && stalled) return { ms: Date.now() - started, problems, settledAt };
    // Each look reads every proxy and credentials document: every 3 s, not every second, so the
    // harness takes less of the 2 cores from the stack it judges (a name's settle time is then
    // known to within 3 s).
    await new Promise((resolve) => setTimeout(resolve, clean > 0 ? 5000 : 3000));
  }
  return { ms: Date.now() - started, problems: [], settledAt };
}
