/**
 * What the stores hold beside the domain's documents: the relay and provider records
 * (`relays/{id}`, `relays/{id}/commands/{name}`, `providers/{name}`, static claims), parsed on every
 * read by both implementations of their ports, and the entries of the audit trails.
 */
import { z } from 'zod';
import { inventoryItemSchema } from '../wire/protocol.js';

export const relayDocSchema = z.object({
  bootId: z.string(),
  seq: z.number(),
  sentAt: z.number(),
  startedAt: z.number(),
  /** When the last report was stored (the heartbeat). */
  heartbeatAt: z.number(),
  providers: z.array(z.object({ name: z.string(), type: z.string(), ok: z.boolean(), message: z.string() })),
  /** `inventoryDigest` of the report whose inventory is stored; absent when its writes took several batches. */
  inventoryDigest: z.string().optional(),
  /** When the stored inventory's first probe heartbeat falls due (epoch ms). */
  probeDueAt: z.number().optional(),
  /** JSON `{instance: sentAt}` of the items changed or removed recently (`*`: any item); see `changedSince`. */
  changes: z.string().optional(),
  /**
   * The oldest report time (relay clock) from which `changes` holds every change: entries older are
   * dropped, and a report whose clock went back moves it past the newest time before. Absent on a
   * document stored before it was recorded (then `changes` vouches for nothing since any time).
   */
  changesFrom: z.number().optional(),
});
export type RelayDoc = z.infer<typeof relayDocSchema>;

/**
 * Where an inventory read left off (`RelayRepository.inventorySince`): the boot and report time of
 * the relay document read with it. Compared only with later relay documents (the relay's clock).
 */
export const inventoryMarkSchema = z.object({ bootId: z.string(), sentAt: z.number() });
export type InventoryMark = z.infer<typeof inventoryMarkSchema>;

/** `text` as JSON checked by `schema` (a field stored as JSON text, a cursor); undefined when absent or not that. */
export function parseJsonAs<T>(schema: z.ZodType<T>, text: string | undefined): T | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed = schema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The last command issued for an instance, and whether the relay has applied it. */
export const commandDocSchema = z.object({
  commandId: z.string(),
  kind: z.enum(['create', 'delete']),
  issuedAt: z.number(),
  provider: z.string(),
  proxy: z.string(),
  specHash: z.string(),
  done: z.boolean(),
  error: inventoryItemSchema.shape.error.nullable(),
  /**
   * When the command was last published (epoch ms). Absent: recorded but its publish never
   * completed (the sender died or the publish failed), so it must be sent again.
   */
  sentAt: z.number().optional(),
});
export type CommandDoc = z.infer<typeof commandDocSchema>;

/** The provider-health monitor's latest verdict on one provider. */
export const providerStatusSchema = z.object({
  name: z.string(),
  type: z.string(),
  status: z.enum(['Healthy', 'Unhealthy', 'Unknown']),
  message: z.string(),
  latencyMs: z.number(),
  lastCheckAt: z.string(),
  detail: z.record(z.string(), z.object({ ok: z.boolean(), message: z.string() })).optional(),
});
export type ProviderStatus = z.infer<typeof providerStatusSchema>;

/**
 * `staticClaims/{provider}~{hash}`: one `static` provider endpoint's claim. Claimed while `instance`
 * is set; released (the fields cleared, `releasedAt` set) by a delete, so a released endpoint can
 * rest before it is claimed again.
 */
export const staticClaimSchema = z.object({
  provider: z.string(),
  host: z.string(),
  port: z.number().int(),
  /** The endpoint's key (`host:port:username`), to match it with the configured list. */
  key: z.string(),
  instance: z.string().optional(),
  proxy: z.string().optional(),
  installationId: z.string().optional(),
  specHash: z.string().optional(),
  /** When it was claimed (epoch ms): the instance's `createdAt`. */
  claimedAt: z.number().optional(),
  releasedAt: z.number().optional(),
});
export type StaticClaim = z.infer<typeof staticClaimSchema>;

/** An entry of an audit trail (`proxies/{name}/events`, `pools/{name}/events`). */
export interface ProxyEvent {
  at: string;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/**
 * Events carry `expireAt` (a timestamp this long after they were written); the Firestore TTL
 * policies in infra/terraform/firestore.tf delete them some time after it passes. The memory store
 * records it too.
 */
export const EVENT_RETENTION_MS = 30 * 24 * 3600 * 1000;
