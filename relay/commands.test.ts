/** Applying relay commands: results, errors, staleness, per-instance ordering, the persisted ledger. */
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PermanentError, QuotaExceededError, RetryableError } from '../shared/errors.js';
import { createLogger } from '../shared/logger.js';
import type { RelayCommand } from '../shared/wire/protocol.js';
import { applyCommand, createCommandExecutor, type CommandDeps } from './commands.js';
import { KeyedSerializer } from './keyed-serializer.js';
import { CommandLedger, ledgerKey } from './ledger.js';
import { FakeBackend } from './testing/fake-backend.js';

const logLines: string[] = [];
const logger = createLogger({ write: (line) => logLines.push(line), level: 'DEBUG' });

function create(name: string, issuedAt: number, commandId = `create-${name}-${issuedAt}`): RelayCommand {
  return {
    kind: 'create',
    commandId,
    relay: 'local',
    provider: 'local',
    issuedAt,
    spec: {
      name,
      proxy: name,
      installationId: 'test',
      specHash: 'h1',
      port: 0,
      placement: {},
      credentials: { username: 'u', password: 'never-logged-pw' },
    },
  };
}

function del(name: string, issuedAt: number, commandId = `delete-${name}-${issuedAt}`): RelayCommand {
  return { kind: 'delete', commandId, relay: 'local', provider: 'local', issuedAt, name };
}

async function setup(): Promise<{ backend: FakeBackend; deps: CommandDeps }> {
  const backend = new FakeBackend('local');
  const ledger = await CommandLedger.load(undefined, logger);
  return { backend, deps: { backends: new Map([['local', backend]]), ledger, installationId: 'test', logger } };
}

describe('applyCommand', () => {
  it('applies a create and records it in the ledger', async () => {
    const { backend, deps } = await setup();
    const outcome = await applyCommand(create('ep-a', 100, 'c1'), deps);
    expect(outcome).toEqual({
      kind: 'done',
      skipped: false,
      result: { commandId: 'c1', provider: 'local', name: 'ep-a', kind: 'create', ok: true },
    });
    expect(backend.instances.has('ep-a')).toBe(true);
    expect(deps.ledger.get(ledgerKey('local', 'ep-a'))).toEqual({ commandId: 'c1', issuedAt: 100 });
  });

  it('skips a create issued before the delete already applied (no resurrection)', async () => {
    const { backend, deps } = await setup();
    await applyCommand(create('ep-a', 100), deps);
    await applyCommand(del('ep-a', 200, 'd1'), deps);
    const late = await applyCommand(create('ep-a', 150, 'late'), deps);
    expect(late).toMatchObject({ kind: 'done', skipped: true, result: { commandId: 'late', ok: true } });
    expect(backend.instances.has('ep-a')).toBe(false);
    expect(backend.calls.map((c) => c.op)).toEqual(['create', 'delete']);
    expect(deps.ledger.get(ledgerKey('local', 'ep-a'))?.commandId).toBe('d1');
    // A newer create is applied; a duplicate of the same command is applied again (idempotent).
    expect(await applyCommand(create('ep-a', 300), deps)).toMatchObject({ skipped: false, result: { ok: true } });
    expect(await applyCommand(create('ep-a', 300), deps)).toMatchObject({ skipped: false, result: { ok: true } });
    expect(backend.instances.has('ep-a')).toBe(true);
  });

  it('reports an unknown provider as a permanent error naming `provider`', async () => {
    const { deps } = await setup();
    const outcome = await applyCommand({ ...create('ep-a', 1), provider: 'elsewhere' }, deps);
    expect(outcome).toMatchObject({
      kind: 'done',
      result: { ok: false, error: { code: 'Permanent', field: 'provider' } },
    });
  });

  it('refuses a create for another installation, naming `spec.installationId`', async () => {
    const { backend, deps } = await setup();
    const command = create('ep-a', 1);
    if (command.kind === 'create') command.spec.installationId = 'other';
    const outcome = await applyCommand(command, deps);
    expect(outcome).toMatchObject({
      result: { ok: false, error: { code: 'Permanent', field: 'spec.installationId' } },
    });
    expect(backend.calls).toEqual([]);
  });

  it.each([
    [
      'permanent',
      new PermanentError('port 1 is outside the range', 'spec.port'),
      { code: 'Permanent', field: 'spec.port' },
    ],
    ['quota', new QuotaExceededError('no free port'), { code: 'QuotaExceeded', message: 'no free port' }],
  ])('reports a %s failure and still orders later commands after it', async (_name, error, info) => {
    const { backend, deps } = await setup();
    backend.fail = (op) => (op === 'create' ? error : undefined);
    const outcome = await applyCommand(create('ep-a', 100), deps);
    expect(outcome).toMatchObject({ kind: 'done', result: { ok: false, error: info } });
    expect(await applyCommand(del('ep-a', 50), deps)).toMatchObject({ skipped: true });
  });

  it.each([
    ['a RetryableError', new RetryableError('backend busy'), 'backend busy'],
    ['an untyped error', new Error('socket hang up'), 'socket hang up'],
  ])(
    'reports %s as a Retryable failure (the reconciler backs off; no redelivery loop)',
    async (_name, error, message) => {
      const { backend, deps } = await setup();
      backend.fail = () => error;
      const outcome = await applyCommand(create('ep-a', 100), deps);
      expect(outcome).toMatchObject({ kind: 'done', result: { ok: false, error: { code: 'Retryable', message } } });
    },
  );

  it('never logs credentials', () => {
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.join('\n')).not.toContain('never-logged-pw');
  });
});

describe('command executor', () => {
  it('applies commands for one instance one at a time in arrival order, and skips the stale one', async () => {
    const { backend, deps } = await setup();
    backend.delayMs = 30;
    const executor = createCommandExecutor(deps);
    const outcomes = await Promise.all([
      executor.execute(create('ep-a', 100, 'c1')),
      executor.execute(del('ep-a', 200, 'd1')),
      executor.execute(create('ep-a', 150, 'late')),
    ]);
    expect(backend.calls).toEqual([
      { op: 'create', name: 'ep-a', overlapped: false },
      { op: 'delete', name: 'ep-a', overlapped: false },
    ]);
    expect(outcomes.map((o) => o.kind === 'done' && o.skipped)).toEqual([false, false, true]);
    expect(backend.instances.has('ep-a')).toBe(false);
  });

  it('applies the same command twice (a resend, then the lost copy delivered again) to one instance, ok both times', async () => {
    const { backend, deps } = await setup();
    const executor = createCommandExecutor(deps);
    const first = await executor.execute(create('ep-a', 100, 'c1'));
    const again = await executor.execute(create('ep-a', 100, 'c1'));
    for (const outcome of [first, again])
      expect(outcome).toMatchObject({ kind: 'done', result: { commandId: 'c1', ok: true } });
    expect([...backend.instances.keys()]).toEqual(['ep-a']);
    // A copy of the create arriving after the delete that followed it is stale: no resurrection.
    await executor.execute(del('ep-a', 200, 'd1'));
    expect(await executor.execute(create('ep-a', 100, 'c1'))).toMatchObject({ kind: 'done', skipped: true });
    expect(backend.instances.has('ep-a')).toBe(false);
  });

  it('applies a delete once: a copy of it is skipped, ok; a copy of one that failed is applied again', async () => {
    const { backend, deps } = await setup();
    await applyCommand(create('ep-a', 100), deps);
    expect(await applyCommand(del('ep-a', 200, 'd1'), deps)).toMatchObject({ skipped: false, result: { ok: true } });
    const copy = await applyCommand(del('ep-a', 200, 'd1'), deps);
    expect(copy).toMatchObject({ kind: 'done', skipped: true, result: { commandId: 'd1', ok: true } });
    expect(backend.calls.map((c) => c.op)).toEqual(['create', 'delete']);

    await applyCommand(create('ep-b', 100), deps);
    backend.fail = (op) => (op === 'delete' ? new RetryableError('busy') : undefined);
    expect(await applyCommand(del('ep-b', 200, 'd2'), deps)).toMatchObject({ result: { ok: false } });
    backend.fail = () => undefined;
    expect(await applyCommand(del('ep-b', 200, 'd2'), deps)).toMatchObject({ skipped: false, result: { ok: true } });
    expect(backend.instances.has('ep-b')).toBe(false);
  });

  it('runs commands for different instances concurrently', async () => {
    const { backend, deps } = await setup();
    backend.delayMs = 100;
    const executor = createCommandExecutor(deps);
    const started = Date.now();
    await Promise.all(['ep-a', 'ep-b', 'ep-c'].map((n) => executor.execute(create(n, 1))));
    expect(Date.now() - started).toBeLessThan(250);
    await executor.idle();
  });
});

describe('command ledger', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'egress-ledger-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('survives a restart, so a stale create is still refused', async () => {
    const file = path.join(dir, 'state', 'relay-commands.json');
    const first = await CommandLedger.load(file, logger);
    await first.record('local/ep-a', { commandId: 'd1', issuedAt: 200 });
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    const { backend, deps } = await setup();
    const restarted = { ...deps, ledger: await CommandLedger.load(file, logger) };
    expect(await applyCommand(create('ep-a', 150), restarted)).toMatchObject({ skipped: true });
    expect(backend.calls).toEqual([]);
  });

  it('never moves an entry backwards, and forgets entries past retention', async () => {
    const file = path.join(dir, 'retention.json');
    let clock = 1_000_000_000_000;
    const ledger = await CommandLedger.load(file, logger, () => clock);
    await ledger.record('local/ep-old', { commandId: 'o', issuedAt: clock });
    await ledger.record('local/ep-a', { commandId: 'new', issuedAt: clock });
    await ledger.record('local/ep-a', { commandId: 'older', issuedAt: clock - 1 });
    expect(ledger.get('local/ep-a')?.commandId).toBe('new');
    clock += 15 * 24 * 3600 * 1000;
    await ledger.record('local/ep-b', { commandId: 'b', issuedAt: clock });
    expect(JSON.parse(await readFile(file, 'utf8'))).toHaveProperty('commands', {
      'local/ep-b': { commandId: 'b', issuedAt: clock, appliedAt: clock },
    });
  });

  it('starts empty, with a warning, from a corrupt file', async () => {
    const file = path.join(dir, 'corrupt.json');
    await writeFile(file, '{ not json');
    const ledger = await CommandLedger.load(file, logger);
    expect(ledger.get('local/ep-a')).toBeUndefined();
    expect(logLines.some((l) => l.includes('command ledger is unreadable'))).toBe(true);
  });
});

describe('KeyedSerializer', () => {
  it('keeps going after a rejection and forgets idle keys', async () => {
    const serial = new KeyedSerializer();
    const order: string[] = [];
    const failing = serial.run('k', () => {
      order.push('a');
      return Promise.reject(new Error('boom'));
    });
    const next = serial.run('k', () => {
      order.push('b');
      return Promise.resolve(2);
    });
    await expect(failing).rejects.toThrow('boom');
    expect(await next).toBe(2);
    await serial.idle();
    expect(order).toEqual(['a', 'b']);
  });
});
