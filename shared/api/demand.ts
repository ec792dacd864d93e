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
 * waiting to be folded, reconciles the pool at once; any other is read by the pool's next interval.
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
  const folded = pool.status.usage?.folded[report.gateway];
  const outcome = await deps.demand.record(name, report, (deps.now ?? Date.now)(), folded);
  // Demand moves only an autoscaled pool; usage is folded for every pool.
  const autoscaled = pool.spec.autoscale !== undefined;
  if ((autoscaled && outcome.kick) || outcome.fold) await kickPools(deps.bus, [name]);
  return { status: 202, body: { accepted: true, name, autoscaled, applied: outcome.applied } };
}
