/** `POST /v1/pools/{name}/demand`: a gateway's demand for one pool (docs/api.md "Demand"). */
import { demandReportSchema } from '../domain/autoscale.js';
import { kickPools } from '../reconcile/kick.js';
import type { ApiDeps } from './deps.js';
import { ApiError } from './api-error.js';
import type { ApiResponse } from './http.js';
import { parseObjectBody } from './json-body.js';

/**
 * Records one gateway's demand and usage for pool `name`: one read of the pool, and one transaction
 * on `poolDemand/{pool}.{gateway}` (one read, at most one write), for a fixed pool too (its usage
 * is counted). A report that makes demand appear, or requests wait, or brings usage where none was
 * waiting to be folded while a fold is due, reconciles the pool at once; any other is read by the
 * pool's next interval.
 *
 * @returns 202 `{accepted, name, autoscaled, applied}`: `applied` false for a duplicated or late report
 * @throws ApiError 404 (no such pool); ValidationError (400) naming the field
 */
export async function postDemand(deps: ApiDeps, name: string, body: unknown): Promise<ApiResponse> {
  if (!deps.pools || !deps.demand) throw new ApiError('NotFound', 'pools are not enabled in this deployment');
  const report = parseObjectBody(
    demandReportSchema,
    body,
    'a demand report',
    '{"gateway": "gw-1", "sequence": 1, "inFlight": 0, "startedPerSecond": 0, "waiting": 1}',
  );
  const pool = await deps.pools.get(name);
  if (!pool || pool.deletionRequestedAt) throw new ApiError('NotFound', `pool "${name}" not found`);
  const usage = pool.status.usage;
  const now = (deps.now ?? Date.now)();
  const outcome = await deps.demand.record(name, report, now, usage?.folded[report.gateway]);
  // Within a usage interval of the last fold no fold is due yet, and the pool looks again when it
  // is (a fold that counted asks for that look; a sweep looks at every pool): kicking it for each
  // gateway's first counts after a fold would cost one reconcile per gateway per fold.
  const foldDue = !usage || now - usage.foldedAt >= deps.config.usageIntervalSeconds * 1000;
  // Demand moves only an autoscaled pool; usage is folded for every pool.
  const autoscaled = pool.spec.autoscale !== undefined;
  if ((autoscaled && outcome.kick) || (outcome.fold && foldDue)) await kickPools(deps.bus, [name]);
  return { status: 202, body: { accepted: true, name, autoscaled, applied: outcome.applied } };
}
