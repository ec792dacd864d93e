/**
 * The kernel fence of a process backend whose proxies run as a user of their own (`runAs`): the
 * provider's egress policy as an nftables table on that uid, loaded with `nft` (root), so a proxy
 * reaches only what the policy allows, judged on resolved addresses, whatever form of address a
 * client sends.
 */
import { spawn } from 'node:child_process';
import { z } from 'zod';
import { nftFence, type EgressPolicy } from '../../../shared/config/egress-policy.js';
import { RetryableError } from '../../../shared/errors.js';

/** Debian's `nft` (package nftables). */
export const NFT_PATH = '/usr/sbin/nft';

const id = z
  .number()
  .int()
  .min(1)
  .max(2 ** 32 - 2);

/** The uid and gid the proxy processes run as. */
export const runAsSchema = z.strictObject({ uid: id, gid: id });
export type RunAs = z.infer<typeof runAsSchema>;

/**
 * The table of one provider's fence on one uid: nftables names take letters, digits and
 * underscores. The uid is part of the name so that two relays on one machine (two local stacks)
 * that name a provider alike each keep their own table rather than replacing the other's.
 */
export function fenceTable(provider: string, uid: number): string {
  return `egress_fence_${provider.replace(/-/g, '_')}_${uid}`;
}

/**
 * Loads (or replaces) the fence table of `provider` for the uid its proxies run as.
 *
 * @throws RetryableError when `nft` is missing or refuses (not root: it needs CAP_NET_ADMIN)
 */
export async function loadFence(provider: string, policy: EgressPolicy, runAs: RunAs, nft = NFT_PATH): Promise<void> {
  const script = nftFence(policy, { table: fenceTable(provider, runAs.uid), owner: runAs.uid });
  await runNft(nft, ['-f', '-'], script);
}

/**
 * Removes the fence table of `provider` on `uid` (tests, and the local stack once its proxies are
 * stopped; a relay leaves it, since its proxies outlive it).
 */
export async function removeFence(provider: string, uid: number, nft = NFT_PATH): Promise<void> {
  await runNft(nft, ['delete', 'table', 'inet', fenceTable(provider, uid)], '').catch(() => undefined);
}

function runNft(nft: string, args: string[], input: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(nft, args, { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.once('error', (err) =>
      reject(new RetryableError(`cannot run ${nft} (Debian package nftables): ${err.message}`, 30_000, { cause: err })),
    );
    child.once('exit', (code) =>
      code === 0
        ? resolve()
        : reject(new RetryableError(`${nft} ${args.join(' ')} failed (code ${code}): ${stderr.trim()}`, 30_000)),
    );
    child.stdin.end(input);
  });
}
