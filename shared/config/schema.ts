/** The configuration schema: installation identity, intervals, and the configured providers. */
import { z } from 'zod';
import { isLoopbackHost } from '../domain/hosts.js';
import { dnsLabel } from '../domain/names.js';
import { countryCodeSchema } from '../domain/country.js';
import { placementSchema } from '../domain/proxy.js';
import { apiTokenSchema } from '../api/scopes.js';
import { DEFAULT_EGRESS_POLICY, echoRefusal, egressPolicySchema } from './egress-policy.js';

export const PROVIDER_TYPES = ['process', 'kvm', 'gcp', 'kubernetes', 'static'] as const;
export type ProviderType = (typeof PROVIDER_TYPES)[number];
/** Provider types whose backends the functions cannot reach: work goes through a relay. */
export const RELAY_TYPES: readonly ProviderType[] = ['process', 'kvm'];

/** A quarter of a provider's proxies at once, as Kubernetes' default `maxUnavailable`. */
export const DEFAULT_ROLLOUT_BUDGET = '25%';

/** How many of a provider's `proxies` its `rolloutBudget` lets be Replacing at once (at least one). */
export function rolloutLimit(budget: number | string, proxies: number): number {
  if (typeof budget === 'number') return budget;
  return Math.max(1, Math.floor((proxies * Number(budget.slice(0, -1))) / 100));
}

export const providerConfigSchema = z
  .strictObject({
    name: dnsLabel,
    type: z.enum(PROVIDER_TYPES),
    /** For relay-backed types: the relay id whose subscription receives the commands. */
    relay: dnsLabel.optional(),
    /** Named placements a request may refer to with `{"catalogue": "name"}`. */
    catalogue: z.record(dnsLabel, placementSchema).default({}),
    /** Type-specific options (credentials reference, project, cluster, …). */
    options: z.record(z.string(), z.unknown()).default({}),
    /**
     * At most this many proxies of this provider replaced at once for spec drift or rotation: a
     * number, or a share of the provider's proxies (`"25%"`, at least one), as Kubernetes'
     * `maxUnavailable`. A share keeps a roll's time flat as the fleet grows.
     */
    rolloutBudget: z
      .union([
        z.number().int().min(1),
        z.string().regex(/^(100|[1-9][0-9]?)%$/, 'a whole number of proxies, or a share from "1%" to "100%"'),
      ])
      .default(DEFAULT_ROLLOUT_BUDGET),
    /**
     * The country (ISO 3166-1 alpha-2) this provider's proxies leave from, e.g. a kvm host's: an
     * egress located elsewhere is flagged (`EgressVerified=False`). A gcp provider's comes from each
     * placement's region instead.
     */
    country: countryCodeSchema.optional(),
    /**
     * Where this provider's proxies may connect (shared/config/egress-policy.ts); absent: the safe
     * default. Relay-backed providers take theirs from the relay's backend entry, where it is enforced.
     */
    egress: egressPolicySchema.optional(),
  })
  .refine((p) => !RELAY_TYPES.includes(p.type) || p.relay !== undefined, {
    message: 'relay-backed providers (process, kvm) must name the relay that runs them',
    path: ['relay'],
  })
  .refine((p) => p.type !== 'gcp' || p.country === undefined, {
    message: "a gcp provider's country comes from each placement's zone (its region); remove country",
    path: ['country'],
  })
  .refine((p) => !RELAY_TYPES.includes(p.type) || p.egress === undefined, {
    message: "a relay-backed provider's egress policy belongs in its relay's backend entry (relay.backends[].egress)",
    path: ['egress'],
  });
export type ProviderConfig = z.infer<typeof providerConfigSchema>;

const seconds = z.number().positive();

export const configSchema = z
  .strictObject({
    /** Project id for Firestore and Pub/Sub. */
    project: z.string().min(1).default('demo-egress'),
    /** This installation's identity: instances carry it, GC only touches its own. */
    installationId: dnsLabel,
    /** The echo endpoint probes fetch through each proxy (returns the caller's IP). */
    echoUrl: z.url(),
    checkIntervalSeconds: seconds.default(60),
    gcIntervalSeconds: seconds.default(300),
    /** An unowned instance younger than this is left alone (it may be a create in flight). */
    gcGraceSeconds: seconds.default(600),
    /** Consecutive probe failures after which a Running proxy is replaced. */
    unhealthyAfter: z.number().int().min(1).default(3),
    /**
     * Instances of one proxy replaced in a row without ever passing a probe after which creation
     * stops (phase Failed, reason NeverReachable) until the proxy is applied again: a proxy that can
     * never be reached (a firewall, say) is not recreated, and billed, without end.
     */
    neverReadyLimit: z.number().int().min(1).max(100).default(3),
    probeTimeoutSeconds: seconds.default(5),
    /**
     * A pool member drained (scaled down, rotated out) keeps serving this long before its instance
     * is deleted: discovery stops handing it out at once, but a gateway's list is up to a discovery
     * page (2 s) and a poll (2 s) old, and requests in flight through it should end, not be reset.
     * 0 deletes at once. Long tunnels need more; a standalone proxy's delete is never delayed.
     */
    drainSeconds: z.number().min(0).max(600).default(5),
    /** How long a worker may hold a proxy's lease around a provider call. */
    leaseSeconds: seconds.default(60),
    backoffBaseSeconds: seconds.default(10),
    backoffMaxSeconds: seconds.default(600),
    /**
     * A flagged proxy (its egress IP shared) re-records the sharing, and kicks its peers to verify
     * theirs, at most this often.
     */
    heartbeatSeconds: seconds.default(600),
    /**
     * A healthy, unchanged proxy's status (and a relay's inventory item) is rewritten at most this
     * often, to refresh the probe on record; any significant change is written at once. Six hours
     * keeps a steady fleet's background writes under 0.01 per proxy per check (docs/performance.md).
     */
    statusRefreshSeconds: seconds.default(21_600),
    /**
     * Proxies per check batch (one invocation each). 200 keeps a sweep under one invocation per 100
     * proxies, and its per-page reads (changes, count, verdict) at 0.015 per proxy (docs/performance.md).
     */
    checkBatchSize: z.number().int().min(1).max(500).default(200),
    /** How often the provider-health monitor checks every provider. */
    healthIntervalSeconds: seconds.default(60),
    /**
     * Bearer tokens the HTTP API accepts, each `scope:token` (`discover`, `read`, `admin`) or a bare
     * token (admin); also `EGRESS_API_TOKENS`, comma-separated.
     */
    apiTokens: z
      .array(apiTokenSchema)
      .refine((ts) => new Set(ts.map((t) => t.token)).size === ts.length, 'a token may be given only once (one scope)')
      .default([]),
    /**
     * A pool's spread entry that went out (provider unhealthy, QuotaExceeded) gets its share back
     * only after staying good this long; the delay doubles each time it relapses soon after (max 16×).
     */
    poolRecoverSeconds: seconds.default(60),
    /**
     * An autoscaled pool is reconciled this often while it is not at rest (demand, or above its
     * minimum): one reconcile per interval whatever the number of gateways reporting its demand.
     */
    autoscaleIntervalSeconds: seconds.default(5),
    /**
     * A pool folds its gateways' usage reports into `status.usage` at most this often (one write of
     * the pool's document), while reports bring new counts.
     */
    usageIntervalSeconds: seconds.default(60),
    /** Feedback from traffic (`POST /v1/proxies/{name}/reports`, docs/api.md). */
    reports: z
      .strictObject({
        /** Reports one caller (one API token) may send per minute, over all proxies; more answer 429 (per API instance). */
        perCallerPerMinute: z.number().int().min(1).default(60),
        /**
         * Bans one caller's reports may cause per hour; past it a report that would ban is counted
         * only (a caller owning domains that answer 403 cannot churn the fleet).
         */
        bansPerCallerPerHour: z.number().int().min(0).default(20),
        /** How long a report with a target hides the proxy from `discovery?for=<target>`. */
        excludeSeconds: seconds.default(3600),
        /** "banned" for this many distinct targets within `banWindowSeconds` bans the proxy (it is replaced). */
        banTargets: z.number().int().min(1).default(3),
        banWindowSeconds: seconds.default(3600),
      })
      .prefault({}),
    /** Events kept per proxy. */
    maxEvents: z.number().int().min(1).default(50),
    providers: z
      .array(providerConfigSchema)
      .refine((ps) => new Set(ps.map((p) => p.name)).size === ps.length, 'provider names must be unique'),
  })
  .superRefine((c, ctx) => {
    // A fence that refuses the echo endpoint fails every probe: each proxy would be replaced forever.
    // An echo on loopback is a local stand-in (the wire fakes' tests, whose configs give their
    // providers a policy that admits it).
    if (loopbackUrl(c.echoUrl)) return;
    c.providers.forEach((p, i) => {
      if (RELAY_TYPES.includes(p.type)) return;
      const refusal = echoRefusal(p.egress ?? DEFAULT_EGRESS_POLICY, c.echoUrl);
      if (refusal)
        ctx.addIssue({ code: 'custom', message: `egress policy ${refusal}`, path: ['providers', i, 'egress'] });
    });
  });
/** Whether a URL names this machine. */
function loopbackUrl(url: string): boolean {
  return URL.canParse(url) && isLoopbackHost(new URL(url).hostname);
}
export type Config = Readonly<z.infer<typeof configSchema>>;
