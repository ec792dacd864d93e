/** Credentials remembered per proxy incarnation, so a probe costs no read on every check. */
import { randomBytes } from 'node:crypto';
import type { Credentials } from './ports.js';

/** Fresh per-proxy credentials from a secure random source. */
export function generateCredentials(proxy: string): Credentials {
  return { username: `u-${proxy.slice(0, 20)}`, password: randomBytes(18).toString('base64url') };
}

/** At most this many proxies' credentials are remembered per process (about 100 bytes each). */
const MAX_KNOWN_CREDENTIALS = 50_000;

/** What `credentials(name, reuse)` remembers: by proxy name with its incarnation, oldest first. */
export class CredentialsMemo {
  private readonly known = new Map<string, { incarnation: string; credentials: Credentials }>();

  /** The credentials remembered for this incarnation of the proxy, if any. */
  recall(name: string, incarnation: string): Credentials | undefined {
    const known = this.known.get(name);
    return known?.incarnation === incarnation ? known.credentials : undefined;
  }

  remember(name: string, incarnation: string, credentials: Credentials): void {
    this.known.delete(name);
    if (this.known.size >= MAX_KNOWN_CREDENTIALS) {
      const oldest = this.known.keys().next();
      if (!oldest.done) this.known.delete(oldest.value);
    }
    this.known.set(name, { incarnation, credentials });
  }

  forget(name: string): void {
    this.known.delete(name);
  }
}

/**
 * Reads credentials through the memo: with `reuse`, credentials read before for the same
 * incarnation (the document's `createdAt`) are returned without a read; `{fresh: true}` reads and
 * remembers.
 */
export async function credentialsThrough(
  memo: CredentialsMemo,
  name: string,
  reuse: { incarnation: string; fresh?: boolean } | undefined,
  read: () => Promise<Credentials | undefined>,
): Promise<Credentials | undefined> {
  const known = reuse && !reuse.fresh ? memo.recall(name, reuse.incarnation) : undefined;
  if (known) return known;
  const credentials = await read();
  if (reuse && credentials) memo.remember(name, reuse.incarnation, credentials);
  return credentials;
}
