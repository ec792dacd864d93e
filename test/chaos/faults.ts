/**
 * The faults `npm run chaos` injects into a running local stack, each as the real thing: SIGKILL of
 * the relay, of one function's process (the launcher starts a new one, as Cloud Run would), of one
 * proxy process, and the emulators' TCP connections cut for a while (`ss -K`, every 100 ms).
 */
import { execFile } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Rng } from '../guarantees/support/prng.js';

const run = promisify(execFile);

export type FaultKind = 'relay' | 'function' | 'proxy' | 'emulators';

/** One fault as it happened: what was hit, and when (epoch ms; a cut lasts until `until`). */
export interface FaultEvent {
  kind: FaultKind;
  target: string;
  at: number;
  until: number;
}

/** The command line of every process, by PID (processes that end while read are skipped). */
export function commandLines(): Map<number, string> {
  const lines = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      lines.set(Number(entry), readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' '));
    } catch {
      // the process ended while we looked
    }
  }
  return lines;
}

/** The proxy processes of the stack at `home`: the process backend marks each with its state dir and name. */
export function proxyProcesses(home: string): { pid: number; name: string }[] {
  return [...commandLines()].flatMap(([pid, line]) => {
    const name = /--egress-proxy=(\S+)/.exec(line)?.[1];
    return name && line.includes(`--egress-state=${home}`) ? [{ pid, name }] : [];
  });
}

function readPid(file: string): number {
  const pid = Number(readFileSync(file, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`${file} holds no PID`);
  return pid;
}

function kill(pid: number): boolean {
  try {
    process.kill(pid, 'SIGKILL');
    return true;
  } catch {
    return false; // it was gone already
  }
}

export class Faults {
  constructor(
    private readonly home: string,
    private readonly emulatorPorts: number[],
    private readonly rng: Rng,
  ) {}

  /** SIGKILLs the relay (the launcher restarts it; it re-adopts its proxy processes). */
  killRelay(): FaultEvent {
    const at = Date.now();
    kill(readPid(join(this.home, 'relay.pid')));
    return { kind: 'relay', target: 'relay', at, until: at };
  }

  /** SIGKILLs one function's process, chosen at random. */
  killFunction(): FaultEvent {
    const files = readdirSync(join(this.home, 'pids')).filter((f) => f.startsWith('function-'));
    const file = this.rng.pick(files);
    const at = Date.now();
    kill(readPid(join(this.home, 'pids', file)));
    return { kind: 'function', target: file.replace(/^function-|\.pid$/g, ''), at, until: at };
  }

  /** SIGKILLs one proxy process, chosen at random; undefined when none runs. */
  killProxy(): FaultEvent | undefined {
    const processes = proxyProcesses(this.home);
    if (processes.length === 0) return undefined;
    const victim = this.rng.pick(processes);
    const at = Date.now();
    kill(victim.pid);
    return { kind: 'proxy', target: victim.name, at, until: at };
  }

  /** Cuts every TCP connection to the emulators, again every 100 ms, for `ms`. */
  async cutEmulators(ms: number): Promise<FaultEvent> {
    const filter = `( ${this.emulatorPorts.map((p) => `dport = :${p}`).join(' or ')} )`;
    const at = Date.now();
    while (Date.now() - at < ms) {
      await run('ss', ['-K', '-t', 'state', 'established', filter]);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return { kind: 'emulators', target: this.emulatorPorts.join(','), at, until: Date.now() };
  }
}
