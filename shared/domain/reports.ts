/**
 * Feedback from traffic (docs/api.md "Reports: feedback from traffic"): the report a client posts, what it leaves on
 * the proxy's status (`status.reports`, `status.ban`), and the pure rules that read them.
 */
import { isIP } from 'node:net';
import { z } from 'zod';

export const REPORT_REASONS = ['banned', 'blocked', 'error'] as const;
export type ReportReason = (typeof REPORT_REASONS)[number];

const HOST_LABEL = /^[a-z0-9_]([-a-z0-9_]{0,61}[a-z0-9_])?$/;

/**
 * A target as reports and `discovery?for=` name it, normalised (lowercase, no trailing dot): a
 * host name (`example.com`, `www.example.com`) or an IP address; never a URL, a port or a path.
 *
 * @returns the normalised target, or undefined when `raw` is not one
 */
export function normaliseTarget(raw: string): string | undefined {
  const host = raw.trim().toLowerCase().replace(/\.$/, '');
  if (host.length === 0 || host.length > 253) return undefined;
  if (isIP(host) !== 0) return host;
  return host.split('.').every((label) => HOST_LABEL.test(label)) ? host : undefined;
}

/** A target field: a host name or IP address, normalised. */
export const targetSchema = z.string().transform((raw, ctx) => {
  const host = normaliseTarget(raw);
  if (host === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: 'must be a host name like example.com (or an IP address), without scheme, port or path',
    });
    return z.NEVER;
  }
  return host;
});

/** The body of `POST /v1/proxies/{name}/reports`. */
export const reportRequestSchema = z.strictObject({
  reason: z.enum(REPORT_REASONS, { error: 'must be "banned", "blocked" or "error"' }),
  /** The site that refused the traffic; absent: the proxy as a whole (banned everywhere). */
  target: targetSchema.optional(),
  detail: z.string().max(1024, 'must be at most 1024 characters').optional(),
  /** Makes a retried report count once (per caller and proxy). */
  requestId: z
    .string()
    .min(1, 'must not be empty')
    .max(128, 'must be at most 128 characters')
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
    .optional(),
  /** When the client saw it (ISO 8601); default: when the report arrives. A report older than the instance does not ban it. */
  observedAt: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 time like 2026-12-01T10:00:00Z' }).optional(),
});
export type ReportRequest = z.infer<typeof reportRequestSchema>;

/** A targeted report still on record: hides the proxy from `discovery?for=<domain>` until `until`. */
export const reportedTargetSchema = z.object({
  domain: z.string(),
  reason: z.enum(REPORT_REASONS),
  /** When it was observed (ISO). */
  at: z.string(),
  /** Hidden for this domain until then (ISO). */
  until: z.string(),
});
export type ReportedTarget = z.infer<typeof reportedTargetSchema>;

/** `status.reports`: counts by reason over the proxy's life, and the targeted reports in force. */
export const reportTallySchema = z.object({
  banned: z.number().int(),
  blocked: z.number().int(),
  error: z.number().int(),
  lastAt: z.string(),
  targets: z.array(reportedTargetSchema),
});
export type ReportTally = z.infer<typeof reportTallySchema>;

/**
 * `status.ban`: the proxy's instance was reported banned (without a target, or for enough
 * distinct targets). It applies to the instances created at or before `at`: a lone proxy is
 * replaced in place (same name, fresh instance); a pool member is left to its pool, which surges.
 */
export const banSchema = z.object({
  /** When the ban was observed (ISO). */
  at: z.string(),
  /** Why, for people: `reported banned` or `banned by 3 targets within 1h`. */
  reason: z.string(),
  /** The targets that tripped it (empty for a ban without a target). */
  targets: z.array(z.string()),
  /** The banned instance's `createdAt` (ISO) and, when probed, its egress IP. */
  instanceCreatedAt: z.string(),
  egressIp: z.string().optional(),
});
export type Ban = z.infer<typeof banSchema>;

/** The knobs of `config.reports`. */
export interface ReportPolicy {
  excludeMs: number;
  banTargets: number;
  banWindowMs: number;
}

/** The instance a report is about, as the stored status shows it. */
export interface ReportedInstance {
  createdAt: number;
  egressIp?: string | undefined;
}

/** Upper bound on targets kept on one status (the oldest go first). */
export const MAX_REPORTED_TARGETS = 100;

/** True when `ban` applies to an instance created at `createdAt` (epoch ms): it is the banned one, not its replacement. */
export function banApplies(ban: Ban | undefined, createdAt: number | undefined): boolean {
  return ban !== undefined && createdAt !== undefined && createdAt <= Date.parse(ban.at);
}

/** Whether `domain` is `target` or one of its subdomains (`www.example.com` under `example.com`). */
export function coversDomain(target: string, domain: string): boolean {
  return domain === target || (isIP(target) === 0 && isIP(domain) === 0 && domain.endsWith(`.${target}`));
}

/**
 * Whether discovery for `domain` must skip this proxy: a targeted report for the domain (or a
 * parent) still in force against the current instance.
 */
export function excludedFor(
  tally: ReportTally | undefined,
  domain: string,
  instanceCreatedAt: number | undefined,
  now: number,
): boolean {
  return (tally?.targets ?? []).some(
    (t) =>
      Date.parse(t.until) > now &&
      (instanceCreatedAt === undefined || Date.parse(t.at) >= instanceCreatedAt) &&
      coversDomain(t.domain, domain),
  );
}

/** What one report does to the status. */
export interface ReportOutcome {
  reports: ReportTally;
  /** The ban after the report (unchanged, new, or with more targets). */
  ban: Ban | undefined;
  /** This report put a ban on the current instance. */
  banned: boolean;
  /** The report is about an instance that is gone (older than the current one, or none is up). */
  stale: boolean;
  /** The report would have banned the instance, but its caller's ban budget is spent: it is counted only. */
  withheld: boolean;
}

/**
 * Counts one report and decides whether it bans the current instance. Pure.
 *
 * @param at - when the report was observed (epoch ms, not after `now`)
 * @param instance - the current instance, undefined when none is up
 * @param mayBan - whether the caller may still cause a ban (its ban budget is not spent)
 */
export function countReport(
  previous: { reports?: ReportTally | undefined; ban?: Ban | undefined },
  report: { reason: ReportReason; target?: string | undefined },
  at: number,
  instance: ReportedInstance | undefined,
  now: number,
  policy: ReportPolicy,
  mayBan = true,
): ReportOutcome {
  const iso = (ms: number) => new Date(ms).toISOString();
  const stale = instance === undefined || at < instance.createdAt;
  const old = previous.reports;
  const kept = (old?.targets ?? []).filter(
    (t) =>
      (Date.parse(t.until) > now || Date.parse(t.at) + policy.banWindowMs > now) &&
      (instance === undefined || Date.parse(t.at) >= instance.createdAt),
  );
  let targets = kept;
  if (report.target !== undefined && !stale) {
    const entry = { domain: report.target, reason: report.reason, at: iso(at), until: iso(at + policy.excludeMs) };
    const same = (t: ReportedTarget) => t.domain === entry.domain && t.reason === entry.reason;
    const before = kept.find(same);
    const newest = before && Date.parse(before.at) > at ? before : entry;
    targets = [...kept.filter((t) => !same(t)), newest]
      .sort((a, b) => Date.parse(a.at) - Date.parse(b.at))
      .slice(-MAX_REPORTED_TARGETS);
  }
  const reports: ReportTally = {
    banned: (old?.banned ?? 0) + (report.reason === 'banned' ? 1 : 0),
    blocked: (old?.blocked ?? 0) + (report.reason === 'blocked' ? 1 : 0),
    error: (old?.error ?? 0) + (report.reason === 'error' ? 1 : 0),
    lastAt: iso(Math.max(now, Date.parse(old?.lastAt ?? '') || 0)),
    targets,
  };
  if (stale || report.reason !== 'banned' || instance === undefined) {
    return { reports, ban: previous.ban, banned: false, stale, withheld: false };
  }
  const bannedTargets = [
    ...new Set(
      targets.filter((t) => t.reason === 'banned' && Date.parse(t.at) > now - policy.banWindowMs).map((t) => t.domain),
    ),
  ].sort();
  const trips = report.target === undefined || bannedTargets.length >= policy.banTargets;
  if (!trips) return { reports, ban: previous.ban, banned: false, stale, withheld: false };
  if (banApplies(previous.ban, instance.createdAt) && previous.ban) {
    const merged = [...new Set([...previous.ban.targets, ...(report.target ? [report.target] : [])])].sort();
    return { reports, ban: { ...previous.ban, targets: merged }, banned: false, stale, withheld: false };
  }
  if (!mayBan) return { reports, ban: previous.ban, banned: false, stale, withheld: true };
  const windowText = `${Math.round(policy.banWindowMs / 60_000)}m`;
  const ban: Ban = {
    at: iso(at),
    reason:
      report.target === undefined
        ? 'reported banned'
        : `banned by ${bannedTargets.length} targets within ${windowText}`,
    targets: report.target === undefined ? [] : bannedTargets,
    instanceCreatedAt: iso(instance.createdAt),
    ...(instance.egressIp ? { egressIp: instance.egressIp } : {}),
  };
  return { reports, ban, banned: true, stale, withheld: false };
}
