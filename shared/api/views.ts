/** How the API shows stored documents. */
import type { PoolDoc } from '../domain/pool-status.js';
import type { ProxyDoc } from '../domain/status.js';

/** A stored Proxy or ProxyPool as the API shows it: `metadata` with its bookkeeping, `spec`, `status`. */
export function documentView<D extends ProxyDoc | PoolDoc>(doc: D) {
  return {
    apiVersion: doc.apiVersion,
    kind: doc.kind,
    metadata: {
      name: doc.metadata.name,
      labels: doc.metadata.labels,
      generation: doc.generation,
      createdAt: doc.createdAt,
      ...(doc.deletionRequestedAt ? { deletionRequestedAt: doc.deletionRequestedAt } : {}),
    },
    spec: doc.spec as D['spec'],
    status: doc.status as D['status'],
  };
}
