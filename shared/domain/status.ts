/** Proxy state as stored in Firestore `proxies/{name}` (docs/architecture.md "State in Firestore"): phases, conditions, status. */
import { z } from 'zod';
import { tlsFingerprintSchema } from '../tls/fingerprint.js';
import { labelsSchema, specSchema } from './proxy.js';
import { PHASES, type Phase } from './phases.js';
import { banSchema, reportTallySchema } from './reports.js';

export { PHASES, type Phase };

export const CONDITION_TYPES = ['Provisioned', 'Healthy', 'Ready', 'EgressIp', 'EgressVerified', 'TlsPinned'] as const;
export type ConditionType = (typeof CONDITION_TYPES)[number];

export const conditionSchema = z.object({
  type: z.enum(CONDITION_TYPES),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string(),
  message: z.string(),
  lastTransitionTime: z.string(),
});
export type Condition = z.infer<typeof conditionSchema>;

export const INSTANCE_STATES = ['Pending', 'Running', 'Stopped', 'Terminated', 'Failed'] as const;
export type InstanceState = (typeof INSTANCE_STATES)[number];

export const statusInstanceSchema = z.object({
  name: z.string(),
  ip: z.string(),
  port: z.number(),
  /** The TLS listener's port (`Instance.tlsPort`). */
  tlsPort: z.number().optional(),
  /** The TLS certificate this instance presented to its first TLS probe, pinned for its life. */
  tlsFingerprint: tlsFingerprintSchema.optional(),
  state: z.enum(INSTANCE_STATES),
  createdAt: z.string(),
  specHash: z.string(),
  /** This instance (told apart by `createdAt`) passed a probe at least once. */
  passedProbe: z.boolean().optional(),
});

export const healthSchema = z.object({
  lastProbeAt: z.string(),
  ok: z.boolean(),
  latencyMs: z.number().optional(),
  egressIp: z.string().optional(),
  /** Where the egress IP is, from the offline database (shared/egress-location/): ISO 3166-1 alpha-2. */
  country: z.string().optional(),
  /** The egress IP's autonomous system and its organisation. */
  asn: z.number().int().optional(),
  asnOrg: z.string().optional(),
  /** The certificate the TLS listener presented to this probe (absent: probed without TLS, or failed). */
  tlsFingerprint: tlsFingerprintSchema.optional(),
  error: z.string().optional(),
  consecutiveFailures: z.number().int(),
});
export type Health = z.infer<typeof healthSchema>;

export const statusSchema = z.object({
  phase: z.enum(PHASES),
  observedGeneration: z.number().int(),
  /** `ip:port` of the live instance, for people and scripts; credentials are in `credentials/{name}`. */
  address: z.string().optional(),
  instance: statusInstanceSchema.optional(),
  conditions: z.array(conditionSchema),
  health: healthSchema.optional(),
  /** Capped exponential backoff after QuotaExceeded (or a transient create failure). */
  retry: z
    .object({ attempts: z.number().int(), notBefore: z.string(), reason: z.string(), failedAt: z.number().optional() })
    .optional(),
  /** The desired spec hash a PermanentError was reported for: no retry until the hash changes. */
  failedSpecHash: z.string().optional(),
  /** Egress-IP verification: the IP seen by the echo endpoint, when it was last compared with the fleet. */
  egress: z
    .object({
      ip: z.string(),
      checkedAt: z.string(),
      sharedWith: z.array(z.string()),
      /** False when the last comparison ran before the document showed `ip` (one more is due). */
      confirmed: z.boolean().optional(),
    })
    .optional(),
  /**
   * Instances of this proxy replaced in a row, for this generation, without ever passing a probe
   * (docs/architecture.md "Never reachable"); `stopped` once `neverReadyLimit` of them were tried:
   * no more creates until the generation moves (a changed spec, or re-applying the same one).
   */
  unreachable: z
    .object({
      generation: z.number().int(),
      /** Each such instance's `createdAt` (as in `instance.createdAt`): a redelivered check counts it once. */
      instances: z.array(z.string()),
      /** `ip:port` the newest of them was probed at (empty when it never ran) and its last probe error. */
      address: z.string(),
      error: z.string(),
      stopped: z.boolean(),
    })
    .optional(),
  /** True once any create was attempted: a delete may then only finalise after NotFound. */
  everCreated: z.boolean().optional(),
  /** Feedback from traffic: counts by reason and the targeted reports in force (written by the API only). */
  reports: reportTallySchema.optional(),
  /** The proxy's instance was reported banned: replace it (docs/architecture.md; written by the API only). */
  ban: banSchema.optional(),
});
export type ProxyStatus = z.infer<typeof statusSchema>;

export const leaseSchema = z.object({ holder: z.string(), until: z.number(), generation: z.number().int() });
export type Lease = z.infer<typeof leaseSchema>;

/** The whole `proxies/{name}` document. Timestamps are ISO strings; `requestTime` is epoch ms. */
export const proxyDocSchema = z.object({
  apiVersion: z.literal('egress.dev/v1'),
  kind: z.literal('Proxy'),
  metadata: z.object({ name: z.string(), labels: labelsSchema }),
  spec: specSchema,
  generation: z.number().int(),
  /** Publish time (epoch ms) of the newest request applied; older requests are stale. */
  requestTime: z.number(),
  createdAt: z.string(),
  deletionRequestedAt: z.string().optional(),
  lease: leaseSchema.optional(),
  status: statusSchema,
});
export type ProxyDoc = z.infer<typeof proxyDocSchema>;

/** Status fields only the reports route writes: a reconcile's status write keeps what is stored. */
export const REPORT_OWNED_FIELDS = ['reports', 'ban'] as const;

/** Whether creation stopped for `generation` because its instances were never reachable (`status.unreachable`). */
export function creationStopped(status: ProxyStatus, generation: number): boolean {
  return status.unreachable?.stopped === true && status.unreachable.generation === generation;
}

/** The initial status of a freshly accepted proxy. */
export function initialStatus(): ProxyStatus {
  return { phase: 'Pending', observedGeneration: 0, conditions: [] };
}
