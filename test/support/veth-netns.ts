/** A network namespace of a test's own, joined to the host by a veth pair with a /30 on each end. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface VethNetns {
  netns: string;
  /** The veth end on the host side. */
  hostIf: string;
  /** The veth end moved into the namespace. */
  nsIf: string;
  hostIp: string;
  nsIp: string;
}

/**
 * Creates the namespace (loopback up), the pair, and the addresses on both ends.
 *
 * @returns a runner of commands inside the namespace
 */
export async function createVethNetns(n: VethNetns): Promise<(...args: string[]) => ReturnType<typeof run>> {
  await run('ip', ['netns', 'add', n.netns]);
  const inNs = (...args: string[]) => run('ip', ['netns', 'exec', n.netns, ...args]);
  await inNs('ip', 'link', 'set', 'lo', 'up');
  await run('ip', ['link', 'add', n.hostIf, 'type', 'veth', 'peer', 'name', n.nsIf]);
  await run('ip', ['link', 'set', n.nsIf, 'netns', n.netns]);
  await run('ip', ['addr', 'add', `${n.hostIp}/30`, 'dev', n.hostIf]);
  await run('ip', ['link', 'set', n.hostIf, 'up']);
  await inNs('ip', 'addr', 'add', `${n.nsIp}/30`, 'dev', n.nsIf);
  await inNs('ip', 'link', 'set', n.nsIf, 'up');
  return inNs;
}
