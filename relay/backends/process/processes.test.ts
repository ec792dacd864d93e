import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../../../test/support/eventually.js';
import { awaitExit, exitState, isOurs } from './processes.js';

const MARKERS = ['--egress-test-marker', 'exit-state'];
const children: ChildProcess[] = [];

function start(args: string[]): ChildProcess {
  const child = spawn('sh', args, { stdio: 'ignore' });
  children.push(child);
  return child;
}

afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

describe('process exit states', () => {
  it('a live process carrying the markers is running; one without them is gone (a recycled pid)', async () => {
    const ours = start(['-c', 'sleep 30', ...MARKERS]);
    const other = start(['-c', 'sleep 30']);
    await eventually(async () => expect(await exitState(ours.pid!, MARKERS)).toBe('running'));
    expect(await exitState(other.pid!, MARKERS)).toBe('gone');
  });

  it('a zombie and a pid that does not exist are gone: their ports are free', async () => {
    // The shell's child exits at once and the shell, replaced by sleep, never reaps it.
    const parent = start(['-c', 'sleep 0 & exec sleep 30']);
    const zombie = await eventually(async () => {
      const listed = await readFile(`/proc/${parent.pid}/task/${parent.pid}/children`, 'utf8');
      const pid = Number(listed.trim().split(' ')[0]);
      expect((await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.[0]).toBe('Z');
      return pid;
    });
    expect(await exitState(zombie, MARKERS)).toBe('gone');
    expect(await exitState(2 ** 22 + 1, MARKERS)).toBe('gone');
  });

  it('awaitExit waits only while a process is exiting: a gone or a running one returns at once', async () => {
    const ours = start(['-c', 'sleep 30', ...MARKERS]);
    await eventually(async () => expect(await exitState(ours.pid!, MARKERS)).toBe('running'));
    const started = Date.now();
    await awaitExit(2 ** 22 + 1, MARKERS, 5000);
    await awaitExit(ours.pid!, MARKERS, 5000);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('after a kill -9, awaitExit returns once the port is free again (isOurs alone says gone too early)', async () => {
    // Without awaitExit about three binds in four failed here: the killed Node process's main
    // thread had lost its argv while its other threads still held the listening socket.
    const listen = "const s=require('net').createServer().listen(0,'127.0.0.1',()=>console.log(s.address().port))";
    const { NODE_OPTIONS: _loaders, ...env } = process.env;
    for (let i = 0; i < 12; i++) {
      const child = spawn(process.execPath, ['-e', listen, '--', ...MARKERS], {
        stdio: ['ignore', 'pipe', 'ignore'],
        env,
      });
      children.push(child);
      const port = Number(await new Promise<string>((resolve) => child.stdout.once('data', (d) => resolve(String(d)))));
      process.kill(child.pid!, 'SIGKILL');
      await eventually(async () => expect(await isOurs(child.pid!, MARKERS)).toBe(false), 5000, 1);
      await awaitExit(child.pid!, MARKERS);
      const bound = await new Promise<string>((resolve) => {
        const server = net.createServer();
        server.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
        server.listen(port, '127.0.0.1', () => server.close(() => resolve('free')));
      });
      expect(bound, `try ${i}`).toBe('free');
    }
  }, 30_000);
});
