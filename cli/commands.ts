/** What the API verbs do (apply, get, describe, delete, scale, discover, report); cli/verbs.ts says which runs for which verb. */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseDocuments, type ApplyDocument } from '../shared/domain/documents.js';
import type { PoolSpec } from '../shared/domain/pool.js';
import { ValidationError } from '../shared/errors.js';
import { ApiError } from '../shared/api/api-error.js';
import type { ApiClient } from './api-client.js';
import type { Command } from './command.js';
import { describeProxy } from './describe.js';
import { describePool, formatPools, scalePool, waitForPool } from './pools.js';
import { formatProviders, formatProxies, toJson } from './format.js';
import { waitFor, type ProgressOutput, type WaitTarget } from './wait.js';
import { watchProxies } from './watch.js';

/** The process around a command: streams, environment, clock (tests pass their own). */
export interface Io {
  stdout: ProgressOutput;
  stderr: { write(text: string): void };
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Aborts on Ctrl-C. */
  signal?: AbortSignal | undefined;
  /** Reads `-f FILE`; `-` is stdin. Defaults to the file system. */
  readFile?: (path: string) => string;
  now?: () => number;
  /** Poll interval of `--wait` (default 1 s) and `-w` (default 2 s); tests shorten it. */
  pollIntervalMs?: number;
}

/** A command failed; its message has been printed already (exit 1). */
export class ReportedFailure extends Error {
  override readonly name = 'ReportedFailure';
}

/** An API error as one line: the message, with the field in front when the message lacks it. */
export function apiErrorText(err: ApiError): string {
  return err.field && !err.message.includes(err.field) ? `${err.field}: ${err.message}` : err.message;
}

/** What reading `-f FILE` needs of the process. */
export type FileIo = Pick<Io, 'cwd' | 'readFile'>;

function read(io: FileIo, path: string): string {
  if (io.readFile) return io.readFile(path);
  return path === '-' ? readFileSync(0, 'utf8') : readFileSync(resolve(io.cwd, path), 'utf8');
}

/**
 * Every document of every file, validated before any request is sent.
 *
 * @throws Error naming the file, the document and the field (`f.yaml: documents[1].metadata.name: …`)
 */
export function loadDocuments(io: FileIo, files: readonly string[]): ApplyDocument[] {
  const requests: ApplyDocument[] = [];
  for (const file of files) {
    const label = file === '-' ? '(stdin)' : file;
    let text: string;
    try {
      text = read(io, file);
    } catch (err) {
      throw new Error(`cannot read ${label}: ${err instanceof Error ? err.message : String(err)}`);
    }
    try {
      const docs = parseDocuments(text);
      if (docs.length === 0) throw new Error(`${label}: no Proxy or ProxyPool documents`);
      requests.push(...docs);
    } catch (err) {
      if (err instanceof ValidationError) throw new Error(`${label}: ${err.message}`);
      throw err;
    }
  }
  return requests;
}

/** `apply -f FILE...`: every document, then `--wait` for them. */
export async function apply(client: ApiClient, io: Io, cmd: Command<'apply'>): Promise<void> {
  const requests = loadDocuments(io, cmd.files);
  // The last document for a name wins, as it does in the queue.
  const targets = new Map<string, WaitTarget>();
  const pools = new Map<string, PoolSpec>();
  let failed = 0;
  for (const request of requests) {
    const name = request.metadata.name;
    const kind = request.kind === 'ProxyPool' ? 'pool' : 'proxy';
    try {
      if (request.kind === 'ProxyPool') {
        await client.applyPool(request);
        pools.set(name, request.spec);
      } else {
        await client.applyProxy(request);
        targets.set(name, { name, until: 'ready', request });
      }
      io.stdout.write(`${kind}/${name} accepted\n`);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      io.stderr.write(`error: ${kind}/${name}: ${apiErrorText(err)}\n`);
      if (kind === 'pool') pools.delete(name);
      else targets.delete(name);
      failed++;
    }
  }
  if (cmd.wait && targets.size > 0) await wait(client, io, [...targets.values()], cmd.timeoutMs);
  if (cmd.wait) for (const [name, replicas] of pools) await waitPool(client, io, name, replicas, cmd.timeoutMs);
  if (failed > 0) throw new ReportedFailure(`${failed} of ${requests.length} documents were not accepted`);
}

function waitPool(client: ApiClient, io: Io, name: string, want: PoolSpec | undefined, timeoutMs: number) {
  return waitForPool(client, io.stdout, name, want, {
    timeoutMs,
    intervalMs: io.pollIntervalMs ?? 1000,
    signal: io.signal,
    now: io.now ?? Date.now,
  });
}

/** `get pools`. */
export async function getPools(client: ApiClient, io: Io, cmd: Command<'get-pools'>): Promise<void> {
  const now = (io.now ?? Date.now)();
  const items = await client.listPools();
  if (items.length === 0 && (cmd.output === 'table' || cmd.output === 'wide')) {
    io.stderr.write('No pools found.\n');
    return;
  }
  io.stdout.write(formatPools(items, cmd.output, now));
}

/** `get pool NAME` and `describe pool NAME`. */
export async function getPool(client: ApiClient, io: Io, cmd: Command<'get-pool' | 'describe-pool'>): Promise<void> {
  const now = (io.now ?? Date.now)();
  const pool = await client.getPool(cmd.name);
  if (!pool) throw new Error(`pool "${cmd.name}" not found`);
  io.stdout.write(cmd.verb === 'describe-pool' ? describePool(pool, now) : formatPools([pool], cmd.output, now, true));
}

/** `delete pool NAME`. */
export async function deletePool(client: ApiClient, io: Io, cmd: Command<'delete-pool'>): Promise<void> {
  await client.deletePool(cmd.name);
  io.stdout.write(`pool/${cmd.name} deletion accepted\n`);
  if (cmd.wait) await waitPool(client, io, cmd.name, undefined, cmd.timeoutMs);
}

/** `scale pool NAME --replicas N`. */
export async function scale(client: ApiClient, io: Io, cmd: Command<'scale-pool'>): Promise<void> {
  const scaled = await scalePool(client, cmd.name, cmd.replicas);
  io.stdout.write(scaled.note);
  if (cmd.wait) await waitPool(client, io, cmd.name, scaled.spec, cmd.timeoutMs);
}

/** `delete proxy NAME...`. */
export async function deleteProxies(client: ApiClient, io: Io, cmd: Command<'delete-proxy'>): Promise<void> {
  const targets: WaitTarget[] = [];
  let failed = 0;
  for (const name of cmd.names) {
    try {
      await client.deleteProxy(name);
      io.stdout.write(`proxy/${name} deletion accepted\n`);
      targets.push({ name, until: 'gone' });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      io.stderr.write(`error: proxy/${name}: ${apiErrorText(err)}\n`);
      failed++;
    }
  }
  if (cmd.wait && targets.length > 0) await wait(client, io, targets, cmd.timeoutMs);
  if (failed > 0) throw new ReportedFailure(`${failed} of ${cmd.names.length} deletions were not accepted`);
}

async function wait(client: ApiClient, io: Io, targets: WaitTarget[], timeoutMs: number): Promise<void> {
  await waitFor(client, targets, io.stdout, {
    timeoutMs,
    intervalMs: io.pollIntervalMs ?? 1000,
    signal: io.signal,
    now: io.now,
  });
}

/** `discover`: Ready proxies as URLs, or the entries as JSON. */
export async function discover(client: ApiClient, io: Io, cmd: Command<'discover'>): Promise<void> {
  const filters = {
    provider: cmd.provider,
    pool: cmd.pool,
    forDomain: cmd.forDomain,
    labels: cmd.labels,
    maxLatencyMs: cmd.maxLatencyMs,
    country: cmd.country,
    asn: cmd.asn,
    distinct: cmd.distinct,
    limit: cmd.limit,
    random: cmd.random,
  };
  if (cmd.output === 'json') {
    io.stdout.write(toJson(await client.discover(filters)));
    return;
  }
  const urls = await client.discoverUrls(filters);
  if (urls.length === 0) io.stderr.write('No Ready proxies found.\n');
  io.stdout.write(urls.map((u) => `${u}\n`).join(''));
}

/** `get providers`. */
export async function getProviders(client: ApiClient, io: Io, cmd: Command<'get-providers'>): Promise<void> {
  const now = (io.now ?? Date.now)();
  const list = await client.listProviders();
  if (list.items.length === 0 && (cmd.output === 'table' || cmd.output === 'wide')) {
    io.stderr.write('No providers found.\n');
    return;
  }
  io.stdout.write(formatProviders(list, cmd.output, now));
}

/** `report proxy NAME`: what the API made of the report, in one line. */
export async function reportProxy(client: ApiClient, io: Io, cmd: Command<'report-proxy'>): Promise<void> {
  const { verb: _verb, name, ...report } = cmd;
  const answer = await client.reportProxy(name, report);
  const what = `proxy/${name} ${cmd.reason}${cmd.target ? ` for ${cmd.target}` : ''}`;
  if (answer.duplicate) io.stdout.write(`${what}: already reported (counted once)\n`);
  else if (answer.banned) io.stdout.write(`${what}: reported; the instance is banned and will be replaced\n`);
  else if (answer.stale) io.stdout.write(`${what}: reported; about an earlier instance, counted only\n`);
  else io.stdout.write(`${what}: reported\n`);
}

/** `get proxies` (or `--watch` them). */
export async function getProxies(client: ApiClient, io: Io, cmd: Command<'get-proxies'>): Promise<void> {
  const now = io.now ?? Date.now;
  const filters = { provider: cmd.provider, phase: cmd.phase, labels: cmd.labels };
  if (cmd.watch) {
    return watchProxies(client, (s) => io.stdout.write(s), {
      output: cmd.output,
      filters,
      intervalMs: io.pollIntervalMs ?? 2000,
      signal: io.signal,
      now,
      onError: (message) => io.stderr.write(`error: ${message}\n`),
    });
  }
  const items = await client.listProxies(filters);
  if (items.length === 0 && (cmd.output === 'table' || cmd.output === 'wide')) {
    io.stderr.write('No proxies found.\n');
    return;
  }
  io.stdout.write(formatProxies(items, cmd.output, now()));
}

/** `get proxy NAME` and `describe proxy NAME`. */
export async function getProxy(client: ApiClient, io: Io, cmd: Command<'get-proxy' | 'describe-proxy'>): Promise<void> {
  const now = (io.now ?? Date.now)();
  const found = await client.getProxy(cmd.name);
  if (!found) throw new Error(`proxy "${cmd.name}" not found`);
  if (cmd.verb === 'describe-proxy') {
    io.stdout.write(describeProxy(found, now));
    return;
  }
  const { events: _events, ...proxy } = found;
  io.stdout.write(formatProxies([proxy], cmd.output, now, true));
}
