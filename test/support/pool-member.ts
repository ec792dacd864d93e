/** Test setup: a stored proxy made a pool member, as the pool controller stores its members. */
import { FieldPath, type Firestore } from '@google-cloud/firestore';
import { POOL_LABEL } from '../../shared/domain/pool.js';
import { COLLECTIONS } from '../../shared/store/firestore/client.js';

/**
 * Labels `proxies/{name}` with `egress.dev/pool=<pool>`. A Proxy request may not carry the label
 * (only a pool sets it, `shared/store/firestore/pools.ts`), so tests of what happens to a member's document
 * (reports, discovery, bans) apply a plain proxy and then label it here.
 */
export async function markPoolMember(db: Firestore, name: string, pool: string): Promise<void> {
  await db
    .collection(COLLECTIONS.proxies)
    .doc(name)
    .update(new FieldPath('metadata', 'labels', POOL_LABEL), pool);
}
