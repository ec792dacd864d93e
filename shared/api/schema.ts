/** zod schemas of the HTTP API's answers (docs/api.md), the one copy: the route table names each route's (shared/api/routes.ts), the CLI and the gateway parse with them, the dashboard takes their types, and the handler's views are checked against them. Extra fields kept. */
import { z } from 'zod';
import { poolDemandSchema } from '../domain/autoscale.js';
import { poolUsageSchema } from '../domain/usage.js';
import { tlsFingerprintSchema } from '../tls/fingerprint.js';

/** `{"error": {"code", "message", "field"?}}`. */
export const apiErrorBodySchema = z.object({
  error: z.object({ code: z.string(), message: z.string(), field: z.string().optional() }),
});

/** One entry of `status.conditions` (`type` is open: the API may add types such as `EgressIp`). */
export const conditionSchema = z.looseObject({
  type: z.string(),
  status: z.string(),
  reason: z.string().default(''),
  message: z.string().default(''),
  lastTransitionTime: z.string().optional(),
});
export type ApiCondition = z.infer<typeof conditionSchema>;

/** `metadata` of a Proxy or a ProxyPool as the API shows it. */
const metadataSchema = z.looseObject({
  name: z.string(),
  labels: z.record(z.string(), z.string()).default({}),
  generation: z.number().optional(),
  createdAt: z.string().optional(),
  deletionRequestedAt: z.string().optional(),
});

/** A Proxy object: the stored document without internals. Unknown fields pass through to `-o json`. */
export const proxySchema = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: metadataSchema,
  spec: z.looseObject({
    provider: z.string(),
    placement: z.record(z.string(), z.unknown()).default({}),
    port: z.number().default(0),
    maxAge: z.string().optional(),
  }),
  status: z.looseObject({
    phase: z.string(),
    /** Not listed in docs/api.md; used when present to tell a Ready of an older generation. */
    observedGeneration: z.number().optional(),
    address: z.string().optional(),
    instance: z
      .looseObject({
        name: z.string().optional(),
        ip: z.string().optional(),
        port: z.number().optional(),
        state: z.string().optional(),
        createdAt: z.string().optional(),
      })
      .optional(),
    conditions: z.array(conditionSchema).default([]),
    /** Creation stopped for `generation`: its instances were never reachable (docs/architecture.md "Never reachable"). */
    unreachable: z.looseObject({ generation: z.number(), stopped: z.boolean() }).optional(),
    health: z
      .looseObject({
        ok: z.boolean(),
        latencyMs: z.number().nullish(),
        egressIp: z.string().nullish(),
        /** Where the egress IP is (docs/api.md "Egress location"). */
        country: z.string().nullish(),
        asn: z.number().nullish(),
        asnOrg: z.string().nullish(),
        lastProbeAt: z.string().nullish(),
        consecutiveFailures: z.number().optional(),
        error: z.string().optional(),
      })
      .optional(),
    /** The egress IP as last checked, and the proxies that share it. */
    egress: z.looseObject({ ip: z.string(), checkedAt: z.string(), sharedWith: z.array(z.string()) }).optional(),
  }),
});
export type ApiProxy = z.infer<typeof proxySchema>;

/** One entry of a proxy's recent events. */
export const eventSchema = z.object({
  at: z.string(),
  type: z.string(),
  reason: z.string(),
  message: z.string(),
});
export type ApiEvent = z.infer<typeof eventSchema>;

/** `GET /v1/proxies/{name}`: the Proxy plus its recent events, newest first. */
export const proxyWithEventsSchema = proxySchema.extend({ events: z.array(eventSchema).default([]) });
export type ApiProxyWithEvents = z.infer<typeof proxyWithEventsSchema>;

/** `GET /v1/proxies`. */
export const proxyListSchema = z.object({
  items: z.array(proxySchema),
  /** The next page's cursor (`?cursor=`), null after the last page (shared/api/paging.ts). */
  nextCursor: z.string().nullable().default(null),
});

/** `GET /healthz`. */
export const healthzSchema = z.object({ ok: z.literal(true) });

/** `202` from PUT and DELETE. */
export const acceptedSchema = z.object({ accepted: z.literal(true), name: z.string(), messageId: z.string() });

/** `202` from `POST /v1/proxies/{name}/reports`. */
export const reportAcceptedSchema = z.looseObject({
  accepted: z.literal(true),
  name: z.string(),
  duplicate: z.boolean().default(false),
  banned: z.boolean().default(false),
  stale: z.boolean().default(false),
});
export type ApiReportAccepted = z.infer<typeof reportAcceptedSchema>;

/** `202` from `POST /v1/pools/{name}/demand`: whether the pool is autoscaled (a sleeping one wakes). */
export const demandAcceptedSchema = z.looseObject({
  accepted: z.literal(true),
  name: z.string(),
  autoscaled: z.boolean(),
  applied: z.boolean(),
});
export type ApiDemandAccepted = z.infer<typeof demandAcceptedSchema>;

/** One provider's health as `GET /v1/providers` lists it. */
export const providerSchema = z.looseObject({
  name: z.string(),
  type: z.string(),
  status: z.string(),
  message: z.string().nullish(),
  latencyMs: z.number().nullish(),
  lastCheckAt: z.string().nullish(),
  detail: z.record(z.string(), z.looseObject({ ok: z.boolean(), message: z.string() })).optional(),
});
export type ApiProvider = z.infer<typeof providerSchema>;

/** One data package of the egress-location database, and when its data was published. */
const databaseReleaseSchema = z.looseObject({
  package: z.string(),
  version: z.string(),
  publishedAt: z.string().nullable(),
});

/** `GET /v1/providers`, with the releases of the egress-location database the check function uses. */
export const providerListSchema = z.object({
  items: z.array(providerSchema),
  egressDatabase: z.looseObject({ country: databaseReleaseSchema, asn: databaseReleaseSchema }).optional(),
});
export type ApiProviderList = z.infer<typeof providerListSchema>;

/** One relay as `GET /v1/relays` lists it (the handler's `relays`): null times when it never reported. */
export const relaySchema = z.looseObject({
  id: z.string(),
  heartbeatAt: z.string().nullable(),
  heartbeatAgeSeconds: z.number().nullable(),
  startedAt: z.string().nullable(),
  providers: z.array(z.looseObject({ name: z.string(), ok: z.boolean(), message: z.string() })).default([]),
  instances: z.number().default(0),
});
export type ApiRelay = z.infer<typeof relaySchema>;

/** `GET /v1/relays`. */
export const relayListSchema = z.object({ items: z.array(relaySchema) });

/**
 * One entry of `GET /v1/discovery?format=json`. Its URLs and fingerprint are checked, not only
 * typed: the gateway dials with them, and a TLS URL is only used pinned to a well-formed fingerprint.
 */
export const discoveredSchema = z.looseObject({
  name: z.string().min(1),
  provider: z.string(),
  /** `http://user:pass@ip:port`: the proxy itself, in clear (inside the proxy's network only). */
  url: z.url({ protocol: /^http$/ }),
  /** `https://user:pass@ip:tlsPort`: the proxy behind its TLS listener; null until a probe pinned its certificate. */
  tlsUrl: z.url({ protocol: /^https$/ }).nullish(),
  /** Lowercase hex SHA-256 of the TLS listener's DER certificate, to pin. */
  tlsFingerprint: tlsFingerprintSchema.nullish(),
  egressIp: z.string().nullish(),
  /** ISO 3166-1 alpha-2, upper case; null when the database does not place the egress IP. */
  country: z.string().nullish(),
  asn: z.number().int().nullish(),
  latencyMs: z.number().nullish(),
});
export type ApiDiscovered = z.infer<typeof discoveredSchema>;

/** `GET /v1/discovery?format=json`: only Ready proxies. */
export const discoveryListSchema = z.array(discoveredSchema);

/** `format=urls`: one `http://user:pass@ip:port` per line. */
export const discoveryUrlsSchema = z.array(z.url({ protocol: /^https?$/ }));

/** A member as `GET /v1/pools[/{name}]` lists it. */
export const poolMemberSchema = z.looseObject({
  name: z.string(),
  provider: z.string(),
  entry: z.number(),
  phase: z.string(),
  address: z.string().nullish(),
  egressIp: z.string().nullish(),
  createdAt: z.string().optional(),
  draining: z.boolean().default(false),
});
export type ApiPoolMember = z.infer<typeof poolMemberSchema>;

/** A ProxyPool with its members (and, from `GET /v1/pools/{name}`, its recent events). */
export const poolSchema = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: metadataSchema,
  spec: z.looseObject({
    replicas: z.number().optional(),
    autoscale: z
      .looseObject({ minReplicas: z.number(), maxReplicas: z.number(), target: z.record(z.string(), z.number()) })
      .optional(),
    minAvailable: z.number().optional(),
    maxSurge: z.number().optional(),
    maxCostPerHour: z.number().optional(),
    template: z.looseObject({ spec: z.looseObject({ provider: z.string() }) }),
    spread: z
      .array(
        z.looseObject({
          provider: z.string(),
          placement: z.record(z.string(), z.unknown()).default({}),
          tier: z.number().optional(),
          maxReplicas: z.number().optional(),
        }),
      )
      .optional(),
  }),
  status: z.looseObject({
    observedGeneration: z.number().default(0),
    replicas: z.number().default(0),
    readyReplicas: z.number().default(0),
    updatedReplicas: z.number().default(0),
    entries: z
      .array(
        z.looseObject({
          provider: z.string(),
          tier: z.number().optional(),
          maxReplicas: z.number().optional(),
          desired: z.number(),
          members: z.number(),
          ready: z.number(),
          available: z.boolean(),
          message: z.string().optional(),
        }),
      )
      .default([]),
    conditions: z.array(conditionSchema).default([]),
    cost: z
      .looseObject({
        perHourUsd: z.number(),
        lines: z.array(z.looseObject({ what: z.string(), members: z.number(), perHourUsd: z.number() })),
        unpriced: z.array(z.string()).default([]),
        pricesOf: z.string(),
      })
      .optional(),
    desiredReplicas: z.number().optional(),
    demand: poolDemandSchema.optional(),
    usage: poolUsageSchema.optional(),
  }),
  members: z.array(poolMemberSchema).default([]),
  events: z.array(eventSchema).default([]),
});
export type ApiPool = z.infer<typeof poolSchema>;

/** `GET /v1/pools`. */
export const poolListSchema = z.object({ items: z.array(poolSchema) });
