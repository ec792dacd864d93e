/** `POST /v1/proxies/{name}/reports`: feedback from traffic, validated, rate-limited per caller, counted once. */
import { reportRequestSchema } from '../domain/reports.js';
import { kickChecks } from '../reconcile/kick.js';
import type { ApiDeps } from './deps.js';
import { ApiError } from './api-error.js';
import type { ApiResponse } from './http.js';
import { parseObjectBody } from './json-body.js';

/**
 * Records one report about proxy `name` from `caller`. A ban asks for a check of the proxy at once
 * (the reconcile replaces it, or leaves a pool member to its pool).
 *
 * @returns 202 `{accepted, name, duplicate, banned, stale, withheld, reports}`
 * @throws ApiError 404 (no such proxy), 429 (the caller's budget is spent); ValidationError (400)
 */
export async function postReport(
  deps: ApiDeps,
  name: string,
  caller: string,
  body: unknown,
  signal?: AbortSignal,
): Promise<ApiResponse> {
  const request = parseObjectBody(
    reportRequestSchema,
    body,
    'a report',
    '{"reason": "banned", "target": "example.com"}',
  );
  const now = (deps.now ?? Date.now)();
  const { reports: knobs } = deps.config;
  const outcome = await deps.reports.record(
    {
      proxy: name,
      caller,
      report: request,
      now,
      policy: {
        perCallerPerMinute: knobs.perCallerPerMinute,
        bansPerCallerPerHour: knobs.bansPerCallerPerHour,
        excludeMs: knobs.excludeSeconds * 1000,
        banTargets: knobs.banTargets,
        banWindowMs: knobs.banWindowSeconds * 1000,
      },
    },
    signal,
  );
  if (outcome.kind === 'notFound') throw new ApiError('NotFound', `proxy "${name}" not found`);
  if (outcome.kind === 'limited') {
    throw new ApiError(
      'TooManyRequests',
      `too many reports from this caller: at most ${outcome.limit} a minute (config reports.perCallerPerMinute); retry after ${outcome.retryAfterSeconds}s`,
      { retryAfterSeconds: outcome.retryAfterSeconds },
    );
  }
  if (outcome.kind === 'duplicate')
    return { status: 202, body: { accepted: true, name, duplicate: true, banned: false, stale: false } };
  await deps.proxies.trimEvents(name, deps.config.maxEvents).catch((err: unknown) => {
    deps.logger.warn('trimming events after a report failed', { proxy: name, error: err });
  });
  if (outcome.banned) {
    deps.logger.info('proxy reported banned; asking for a check', { proxy: name, reason: outcome.ban?.reason });
    await kickChecks(deps.bus, [name]);
  }
  if (outcome.withheld)
    deps.logger.warn("a report would have banned a proxy, but its caller's bans this hour are spent", {
      proxy: name,
      caller: caller.slice(0, 8),
      limit: knobs.bansPerCallerPerHour,
    });
  return {
    status: 202,
    body: {
      accepted: true,
      name,
      duplicate: false,
      banned: outcome.banned,
      stale: outcome.stale,
      withheld: outcome.withheld,
      reports: outcome.reports,
      ...(outcome.ban ? { ban: outcome.ban } : {}),
    },
  };
}
