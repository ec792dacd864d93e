/** The probe round's startup grace: a guest that never answered is not counted against while it boots. */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../shared/logger.js';
import type { ProbeResult } from '../shared/probe/probe.js';
import type { Instance } from '../shared/providers/contract.js';
import type { RelayBackend } from './backends/backend.js';
import { HealthBook, probeRound } from './probes.js';

const NOW = 1_800_000_000_000;
const logger = createLogger({ write: () => {}, level: 'ERROR' });

/** A backend with one Running instance created `ageMs` ago; only what a probe round calls. */
function backendWith(ageMs: number, startupGraceMs?: number): RelayBackend {
  const instance: Instance = {
    name: 'ep-a',
    proxy: 'a',
    state: 'Running',
    ip: '127.0.0.1',
    port: 1,
    createdAt: NOW - ageMs,
    specHash: 'h',
    installationId: 'it',
  };
  const unused = () => Promise.reject(new Error('not used by a probe round'));
  return {
    type: 'kvm',
    name: 'lab',
    probesRemotely: true,
    ...(startupGraceMs !== undefined && { startupGraceMs }),
    list: () => Promise.resolve([instance]),
    credentials: () => Promise.resolve({ username: 'u', password: 'p' }),
    resolvePlacement: (placement: Record<string, unknown>) => placement,
    create: unused,
    get: unused,
    delete: unused,
    check: unused,
    close: () => Promise.resolve(),
  };
}

async function round(backend: RelayBackend, book: HealthBook, ok: boolean): Promise<void> {
  const result: ProbeResult = ok ? { ok, latencyMs: 1, egressIp: '192.0.2.7' } : { ok, latencyMs: 1, error: 'refused' };
  await probeRound({
    backends: new Map([['lab', backend]]),
    book,
    echoUrl: 'http://127.0.0.1:9/',
    timeoutMs: 100,
    logger,
    now: () => NOW,
    probe: () => Promise.resolve(result),
  });
}

const instance = { name: 'ep-a' };

describe('probe round: startup grace', () => {
  it('does not record failures of an instance that never answered, within its grace', async () => {
    const backend = backendWith(60_000, 600_000);
    const book = new HealthBook();
    await round(backend, book, false);
    await round(backend, book, false);
    expect(book.get('lab', { ...instance, createdAt: NOW - 60_000 })).toBeUndefined();
  });

  it('records failures once the instance has answered, even within its grace', async () => {
    const backend = backendWith(60_000, 600_000);
    const book = new HealthBook();
    await round(backend, book, true);
    await round(backend, book, false);
    expect(book.get('lab', { ...instance, createdAt: NOW - 60_000 })).toMatchObject({
      ok: false,
      consecutiveFailures: 1,
    });
  });

  it('records failures after the grace, and always for a backend without one', async () => {
    for (const backend of [backendWith(700_000, 600_000), backendWith(1000)]) {
      const book = new HealthBook();
      const createdAt = (await backend.list())[0]?.createdAt ?? 0;
      await round(backend, book, false);
      await round(backend, book, false);
      expect(book.get('lab', { ...instance, createdAt })).toMatchObject({ ok: false, consecutiveFailures: 2 });
    }
  });
});
