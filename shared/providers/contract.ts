/**
 * The provider contract: what every backend (gcp, kubernetes, kvm, process) implements.
 * Its MUST rules are relied on by the reconciler (`shared/reconcile/decide.ts`) and GC
 * (`shared/reconcile/gc.ts`); `test/providers/contract.case.ts` checks them for every provider.
 *
 * The rules are listed once, in `./contract-rules.ts#CONTRACT_RULES`, and cited by id
 * (`rule created-at-nonzero`); `docs/providers.md` gives each the code that relies on it.
 */
import { z } from 'zod';
import { dnsLabel } from '../domain/names.js';
import { healthSchema, INSTANCE_STATES, type InstanceState } from '../domain/status.js';
import { errorInfoSchema } from '../errors.js';

export type { InstanceState };

const portSchema = z.number().int().min(0).max(65535);

/** Per-proxy credentials the proxy must require (407 without them). Never log them. */
export const credentialsSchema = z.strictObject({
  username: z.string().min(1).max(128),
  password: z.string().min(1).max(256),
});
export type Credentials = z.infer<typeof credentialsSchema>;

/** What names an instance and ties it to its proxy, in a spec and in what the backend reports alike. */
const instanceIdentitySchema = z.object({
  /** Backend instance name, from `instanceName(installationId, proxy)`. */
  name: dnsLabel,
  /** The owning proxy's name (`proxies/{proxy}`). */
  proxy: dnsLabel,
  /** This installation's id; every instance is labelled with it and GC only touches its own. */
  installationId: dnsLabel,
  /** The desired spec hash; stored on the instance so drift can be detected. */
  specHash: z.string().max(64),
});

/** What the reconciler asks a provider to create (the relay protocol carries it in a create command). */
export const instanceSpecSchema = instanceIdentitySchema.extend({
  /** The proxy port; `0` lets the provider choose. */
  port: portSchema,
  /** Placement after catalogue resolution (provider-specific keys). */
  placement: z.record(z.string(), z.unknown()),
  credentials: credentialsSchema,
});
export type InstanceSpec = z.infer<typeof instanceSpecSchema>;

/** An instance as the backend sees it (the relay protocol carries it in a report's inventory). */
export const instanceSchema = instanceIdentitySchema.extend({
  state: z.enum(INSTANCE_STATES),
  /** Address clients reach (discovery, `status.address`; rule reachable-with-credentials); empty while Pending. */
  ip: z.string().max(64),
  /**
   * Address the check function probes instead of `ip`, when the two differ: the instance's address
   * inside the network the functions reach it through (a VM's internal IP over the VPC connector).
   * Unset: the prober uses `ip`. Empty while Pending, as `ip` is.
   */
  probeIp: z.string().max(64).optional(),
  port: portSchema,
  /**
   * The TLS listener in front of the proxy (stunnel), on `ip` (and `probeIp`): the same proxy
   * behind a self-signed certificate, whose fingerprint the first probe learns. Absent: none.
   */
  tlsPort: z.number().int().min(1).max(65535).optional(),
  /** Epoch milliseconds; MUST be non-zero (rule created-at-nonzero). */
  createdAt: z.number(),
  /** Set with state `Failed`: why an asynchronous create failed (quota, permanent, transient). */
  error: errorInfoSchema.optional(),
  /** Probe results, for providers whose probes run on the backend side (the relay). */
  health: healthSchema.optional(),
});
export type Instance = z.infer<typeof instanceSchema>;

/** Result of a provider health check. */
export interface ProviderHealth {
  ok: boolean;
  message: string;
  latencyMs: number;
  /** Per-host (or per-backend) detail, for relay-backed providers. */
  detail?: Record<string, { ok: boolean; message: string }>;
}

/** What `Provider.listSince` returns: the whole listing, or what changed since a cursor. */
export interface InstanceDelta {
  /** True: `instances` is the whole listing, as `list` returns it. */
  full: boolean;
  /** The whole listing, or (not full) this installation's instances that may have changed since the cursor. */
  instances: Instance[];
  /** Not full: instances that may have changed and are gone, or are no longer listed (rule list-since-vouch). */
  removed: string[];
  /** Opaque to the caller: where the next `listSince` picks up. */
  cursor: string;
}

/**
 * A backend that creates, observes and deletes proxy instances.
 *
 * @example
 * class MyProvider implements Provider { ... }
 * export function createMyProvider(deps: MyDeps): Provider { return new MyProvider(deps); }
 */
export interface Provider {
  /** The configured provider name (a DNS-1123 label, rule name-dns-label). */
  readonly name: string;
  /** The provider type (`process`, `kvm`, `gcp`, `kubernetes`, `static`). */
  readonly type: string;
  /**
   * True when probes run on the backend side and arrive as `Instance.health`; false when the
   * check function probes the instance itself.
   */
  readonly probesRemotely: boolean;

  /**
   * Validates and completes a placement (after catalogue resolution) without side effects.
   * @throws ValidationError naming the field (`spec.placement.zone`)
   */
  resolvePlacement(placement: Record<string, unknown>): Record<string, unknown>;

  /**
   * Creates the instance, or adopts it when one with this name already exists (AlreadyExists).
   * MAY return before the instance runs (state `Pending`).
   * @throws QuotaExceededError, PermanentError (naming the field), RetryableError
   */
  create(spec: InstanceSpec): Promise<Instance>;

  /**
   * Observes one instance.
   * @throws NotFoundError when it does not exist (and only when that is certain), RetryableError
   */
  get(name: string): Promise<Instance>;

  /** Deletes the instance and all it owns. Idempotent; a missing instance is success (rule delete-idempotent). */
  delete(name: string): Promise<void>;

  /**
   * Lists this installation's instances (never another installation's).
   * @throws RetryableError when the listing is not complete: GC then skips this provider.
   */
  list(): Promise<Instance[]>;

  /**
   * For listings that can say what changed (the relay's inventory): `list`, or only what may have
   * changed since the call that returned `cursor` (rule list-since-vouch). GC keeps the rest from
   * its last listing (`shared/reconcile/gc-inventory.ts`) and re-reads with `get` what it would
   * delete from that copy. "Changed" as a report-fed inventory means it: a probe's time and latency
   * alone are not a change (a kept copy's `health.lastProbeAt` may be older than the backend's).
   *
   * @param cursor - from the last answer; undefined asks for the whole listing
   * @throws as `list` does, when the listing is not complete
   */
  listSince?(cursor: string | undefined): Promise<InstanceDelta>;

  /**
   * The country (ISO 3166-1 alpha-2) a proxy with this resolved placement should leave from, or
   * undefined when the provider cannot say. A looked-up egress country that differs makes the
   * proxy's `EgressVerified` condition False (docs/architecture.md "Egress location").
   */
  expectedCountry?(placement: Record<string, unknown>): string | undefined;

  /** A cheap health check of the backend, for the provider-health monitor. */
  check?(): Promise<ProviderHealth>;

  /**
   * For providers whose observations arrive by report (`probesRemotely`): which instances changed
   * recently, in one read. A sweep asks once per batch and reuses a settled proxy's stored
   * observation only when its instance has not changed since (`shared/reconcile/stored-observation.ts`).
   *
   * @returns `changed(instance, sinceMs)`: false only when the instance certainly did not change since
   */
  changes?(): Promise<(instance: string, sinceMs: number) => boolean>;
}

/** The configured providers by name, as the core (reconcile, GC, health) sees them (shared/providers/registry.ts builds it). */
export interface Registry {
  /** The provider configured under `name`, or undefined. */
  get(name: string): Provider | undefined;
  /** Why `name` has no provider (for the ProviderNotConfigured condition). */
  missing(name: string): string;
  all(): Provider[];
}
