/** The ready marker: written by the seed's last step, read back through the guest agent. */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ErrorCode, LibvirtError, type DomainRef, type LibvirtConnection } from '../../libvirt/index.js';
import { guestSaysReady, READY_MARKER, readyMarkerCommand } from './readiness.js';

const run = promisify(execFile);
const domain: DomainRef = { name: 'ep-1', uuid: new Uint8Array(16), id: 1 };

/** An agent that serves one file (or none), answering as qemu-guest-agent does. */
function agentWith(content: string | undefined, calls: string[] = []): Pick<LibvirtConnection, 'agentCommand'> {
  return {
    agentCommand(_domain, command) {
      return Promise.resolve().then(() => answer(command));
    },
  };
  function answer(command: string): string {
    const { execute, arguments: args } = JSON.parse(command) as { execute: string; arguments: { path?: string } };
    calls.push(execute);
    if (execute === 'guest-file-open') {
      if (content === undefined || args.path !== READY_MARKER)
        throw new LibvirtError(
          { code: 90, domain: 10, message: 'internal error: unable to execute QEMU agent command', level: 2 },
          'QEMU_DOMAIN_AGENT_COMMAND',
        );
      return '{"return": 1000}';
    }
    if (execute === 'guest-file-read')
      return JSON.stringify({
        return: { count: content?.length, 'buf-b64': Buffer.from(content ?? '').toString('base64'), eof: true },
      });
    return '{"return": {}}';
  }
}

describe('guest readiness', () => {
  it('the seed step writes the marker the backend accepts, for its instance and port only', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'egress-ready-'));
    try {
      const [, , script] = readyMarkerCommand('ep-1', 3128, 3129);
      // Run the step's shell against a scratch directory instead of /var/lib (nothing listens: it gives up waiting fast).
      const local = (script ?? '')
        .replaceAll(READY_MARKER, path.join(dir, 'ready'))
        .replace('seq 120', 'seq 1')
        .replace(path.dirname(READY_MARKER), dir);
      await run('sh', ['-c', local]);
      const written = await readFile(path.join(dir, 'ready'), 'utf8');
      const conn = agentWith(written) as LibvirtConnection;
      expect(await guestSaysReady(conn, domain, { instance: 'ep-1', port: 3128 })).toBe(true);
      expect(await guestSaysReady(conn, domain, { instance: 'ep-2', port: 3128 })).toBe(false);
      expect(await guestSaysReady(conn, domain, { instance: 'ep-1', port: 8080 })).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('no marker yet, an agent that does not answer, or garbage: not ready; the file handle is closed', async () => {
    expect(await guestSaysReady(agentWith(undefined) as LibvirtConnection, domain, { instance: 'ep-1', port: 1 })).toBe(
      false,
    );
    const calls: string[] = [];
    expect(
      await guestSaysReady(agentWith('not json', calls) as LibvirtConnection, domain, { instance: 'ep-1', port: 1 }),
    ).toBe(false);
    expect(calls).toEqual(['guest-file-open', 'guest-file-read', 'guest-file-close']);
    const unresponsive = {
      agentCommand: () =>
        Promise.reject(
          new LibvirtError(
            { code: ErrorCode.AGENT_UNRESPONSIVE, domain: 10, message: 'agent is not connected', level: 2 },
            'x',
          ),
        ),
    } as unknown as LibvirtConnection;
    expect(await guestSaysReady(unresponsive, domain, { instance: 'ep-1', port: 1 })).toBe(false);
  });

  it('a lost connection is not "not ready": it propagates', async () => {
    const lost = { agentCommand: () => Promise.reject(new Error('socket closed')) } as unknown as LibvirtConnection;
    await expect(guestSaysReady(lost, domain, { instance: 'ep-1', port: 1 })).rejects.toThrow('socket closed');
  });
});
