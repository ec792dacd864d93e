/** The API's pool routes (docs/api.md): `GET /v1/pools`, `GET/PUT/DELETE /v1/pools/{name}`. */
import { checkPoolProviders, entryKey, memberSpec, poolApplySchema, spreadOf } from '../domain/pool.js';
import type { PoolDoc } from '../domain/pool-status.js';
import { toValidationError } from '../domain/proxy.js';
import type { ProxyDoc } from '../domain/status.js';
import { unsafeJson } from '../domain/text.js';
import { ValidationError } from '../errors.js';
import { refuseMember } from '../store/proxy-rules.js';
import type { ApiDeps } from './deps.js';
import { documentView } from './views.js';
import { ApiError } from './api-error.js';
import type { ApiResponse } from './http.js';
import { TOPICS } from '../bus/topics.js';

/** A pool as the API shows it. */
export const poolView = (doc: PoolDoc) => documentView(doc);

/** A member as a pool shows it: enough to see where it runs and whether it serves. */
function memberView(pool: PoolDoc, m: ProxyDoc) {
  const entries = spreadOf(pool.spec);
  const key = entryKey({ provider: m.spec.provider, placement: m.spec.placement });
  const entry = entries.findIndex((e) => entryKey(memberSpec(pool.spec.template, e)) === key);
  return {
    name: m.metadata.name,
    provider: m.spec.provider,
    /** Index into the pool's spread entries; -1 when its entry is no longer in `spread`. */
    entry,
    phase: m.status.phase,
    address: m.status.address ?? null,
    egressIp: m.status.health?.egressIp ?? null,
    createdAt: m.createdAt,
    draining: m.deletionRequestedAt !== undefined,
  };
}

function pools(deps: ApiDeps) {
  if (!deps.pools) throw new ApiError('NotFound', 'pools are not enabled in this deployment');
  return deps.pools;
}

export async function listPools(deps: ApiDeps): Promise<ApiResponse> {
  const store = pools(deps);
  const items = [];
  for (const doc of await store.list()) {
    const members = await store.members(doc.metadata.name);
    items.push({ ...poolView(doc), members: members.map((m) => memberView(doc, m)) });
  }
  return { status: 200, body: { items } };
}

export async function getPool(deps: ApiDeps, name: string): Promise<ApiResponse> {
  const store = pools(deps);
  const doc = await store.get(name);
  if (!doc) throw new ApiError('NotFound', `pool "${name}" not found`);
  const members = (await store.members(name)).map((m) => memberView(doc, m));
  return { status: 200, body: { ...poolView(doc), members, events: await store.events(name, 20) } };
}

export async function putPool(deps: ApiDeps, name: string, body: unknown): Promise<ApiResponse> {
  pools(deps);
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ValidationError('(body)', 'must be a JSON object (a ProxyPool)');
  const unsafe = unsafeJson(body);
  if (unsafe) throw new ValidationError(unsafe.field, unsafe.reason);
  const given = body as Record<string, unknown>;
  if ('action' in given) throw new ValidationError('action', 'is set by the method: PUT applies, DELETE deletes');
  const metadata = given['metadata'];
  if (metadata !== undefined && (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)))
    throw new ValidationError('metadata', 'must be an object');
  if (metadata && 'name' in metadata && metadata.name !== name)
    throw new ValidationError('metadata.name', `must equal the name in the path ("${name}")`);
  const parsed = poolApplySchema.safeParse({ ...given, action: 'apply', metadata: { ...metadata, name } });
  if (!parsed.success) throw toValidationError(parsed.error);
  checkPoolProviders(
    parsed.data.spec,
    deps.config.providers.map((p) => p.name),
  );
  const messageId = await deps.bus.publish(TOPICS.proxyRequests, parsed.data, { action: 'apply' });
  return { status: 202, body: { accepted: true, name, messageId } };
}

export async function deletePool(deps: ApiDeps, name: string): Promise<ApiResponse> {
  if (!(await pools(deps).get(name))) throw new ApiError('NotFound', `pool "${name}" not found`);
  const request = { apiVersion: 'egress.dev/v1', kind: 'ProxyPool', action: 'delete', metadata: { name } };
  const messageId = await deps.bus.publish(TOPICS.proxyRequests, request, { action: 'delete' });
  return { status: 202, body: { accepted: true, name, messageId } };
}

/**
 * A pool's members are changed only through their pool.
 *
 * @throws ApiError Conflict on `metadata.name`, naming the pool
 */
export function refuseMemberRequest(doc: ProxyDoc | undefined): void {
  try {
    if (doc) refuseMember(doc);
  } catch (err) {
    if (err instanceof ValidationError) throw new ApiError('Conflict', err.reason, { field: err.field });
    throw err;
  }
}
