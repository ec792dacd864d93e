/**
 * The guest's own word that its proxy serves: cloud-init's last step writes {@link READY_MARKER}
 * once tinyproxy listens with the instance's configuration, and the backend reads it through the
 * QEMU guest agent (`guest-file-open`/`read`/`close`), as the gcp provider reads a guest attribute.
 */
import { posix } from 'node:path';
import { z } from 'zod';
import { isLibvirtError, type DomainRef, type LibvirtConnection } from '../../libvirt/index.js';

/** Where the guest records that its proxy serves (persistent: the proxy is enabled across reboots). */
export const READY_MARKER = '/var/lib/egress/ready';

/** How long libvirt waits for the agent on each command. */
const AGENT_TIMEOUT_SECONDS = 5;
/** The marker is one short line; anything longer is not ours. */
const MAX_MARKER_BYTES = 4096;

const marker = z.strictObject({ instance: z.string(), port: z.number().int() });
const agentReply = <T extends z.ZodType>(value: T) => z.object({ return: value });
const openReply = agentReply(z.number().int());
const readReply = agentReply(z.object({ 'buf-b64': z.string(), eof: z.boolean().optional() }));

/**
 * The shell step of the seed that writes the marker once `port` and the TLS listener's `tlsPort`
 * listen (at most 120 s of waiting).
 */
export function readyMarkerCommand(instance: string, port: number, tlsPort: number): string[] {
  const line = JSON.stringify({ instance, port });
  const listening = `ss -Htln "sport = :${port}" | grep -q . && ss -Htln "sport = :${tlsPort}" | grep -q .`;
  return [
    'sh',
    '-c',
    `for i in $(seq 120); do ${listening} && break; sleep 1; done; ` +
      `mkdir -p ${posix.dirname(READY_MARKER)} && printf '%s\\n' '${line}' > ${READY_MARKER}.tmp && mv ${READY_MARKER}.tmp ${READY_MARKER}`,
  ];
}

/**
 * @returns true when the guest's marker names this instance and port; false when the agent does
 *   not answer yet, the marker is absent or names another instance (libvirt's own refusals —
 *   agent not connected, command failed — mean "not yet")
 * @throws what is not a libvirt error (a lost connection says nothing about the guest)
 */
export async function guestSaysReady(
  conn: LibvirtConnection,
  domain: DomainRef,
  expected: { instance: string; port: number },
): Promise<boolean> {
  const command = (execute: string, args: Record<string, unknown>) =>
    conn.agentCommand(domain, JSON.stringify({ execute, arguments: args }), AGENT_TIMEOUT_SECONDS);
  let handle: number;
  try {
    handle = openReply.parse(JSON.parse(await command('guest-file-open', { path: READY_MARKER, mode: 'r' }))).return;
  } catch (err) {
    if (isLibvirtError(err) || err instanceof SyntaxError || err instanceof z.ZodError) return false;
    throw err;
  }
  try {
    const reply = readReply.parse(JSON.parse(await command('guest-file-read', { handle, count: MAX_MARKER_BYTES })));
    const parsed = marker.safeParse(JSON.parse(Buffer.from(reply.return['buf-b64'], 'base64').toString('utf8')));
    return parsed.success && parsed.data.instance === expected.instance && parsed.data.port === expected.port;
  } catch (err) {
    if (isLibvirtError(err) || err instanceof SyntaxError || err instanceof z.ZodError) return false;
    throw err;
  } finally {
    await command('guest-file-close', { handle }).catch(() => undefined);
  }
}
