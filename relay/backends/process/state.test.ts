import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { InstanceSpec } from '../../../shared/providers/contract.js';
import { newInstanceRecord, StateStore } from './state.js';

const dirs: string[] = [];

async function store(): Promise<StateStore> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'egress-state-'));
  dirs.push(dir);
  const s = new StateStore(dir);
  await s.init();
  return s;
}

const spec: InstanceSpec = {
  name: 'ep-a',
  proxy: 'ep-a',
  installationId: 'test',
  specHash: 'h1',
  port: 0,
  placement: {},
  credentials: { username: 'u', password: 'p' },
};

afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('instance state store', () => {
  it('reads an unchanged state file once: every later read (each listing) answers from memory', async () => {
    const s = await store();
    await s.write({
      ...newInstanceRecord(spec, 'local', { host: '127.0.0.1', port: 20000, source: undefined }),
      pid: 7,
    });
    const first = await s.read('ep-a');
    expect(first).toMatchObject({ kind: 'ok', record: { pid: 7 } });
    // The same object: parsed once, not read and checked again.
    const again = await s.read('ep-a');
    expect(again.kind === 'ok' && first.kind === 'ok' && again.record === first.record).toBe(true);
    expect((await s.readAll()).map(({ result }) => result)).toEqual([again]);
  });

  it('reads a file again when it changed under it: in place, by rename, corrupted, removed', async () => {
    const s = await store();
    const file = path.join(s.instancesDir, 'ep-a.json');
    await s.write({
      ...newInstanceRecord(spec, 'local', { host: '127.0.0.1', port: 20000, source: undefined }),
      pid: 7,
    });
    expect(await s.read('ep-a')).toMatchObject({ kind: 'ok', record: { pid: 7 } });

    // Edited in place, same length: the modification and change times differ.
    const text = await readFile(file, 'utf8');
    await new Promise((resolve) => setTimeout(resolve, 20));
    await writeFile(file, text.replace('"pid": 7', '"pid": 8'));
    expect(await s.read('ep-a')).toMatchObject({ kind: 'ok', record: { pid: 8 } });

    // Replaced by another writer (a new inode).
    await writeFile(`${file}.new`, text.replace('"pid": 7', '"pid": 9'));
    await rename(`${file}.new`, file);
    expect(await s.read('ep-a')).toMatchObject({ kind: 'ok', record: { pid: 9 } });

    await writeFile(file, '{"name": 1');
    expect(await s.read('ep-a')).toMatchObject({ kind: 'corrupt' });
    await rm(file);
    expect(await s.read('ep-a')).toEqual({ kind: 'missing' });
  });

  it('reads back what it wrote itself', async () => {
    const s = await store();
    const record = {
      ...newInstanceRecord(spec, 'local', { host: '127.0.0.1', port: 20000, source: undefined }),
      pid: 7,
    };
    await s.write(record);
    expect(await s.read('ep-a')).toMatchObject({ kind: 'ok', record: { pid: 7 } });
    await s.write({ ...record, pid: 11, tlsPort: 20001 });
    expect(await s.read('ep-a')).toMatchObject({ kind: 'ok', record: { pid: 11, tlsPort: 20001 } });
  });
});
