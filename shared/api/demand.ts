/** `POST /v1/pools/{name}/demand`: a gateway's demand for one pool (docs/api.md "Demand"). */
import { demandReportSchema } from '../domain/autoscale.js';
import { kickPools } from '../reconcile/kick.js';
import type { ApiDeps } from './deps.js';
import { ApiError, type ApiResponse } from './http.js';
import { parseObjectBody } from './json-body.js';

/**
 * Records one gateway's demand for pool `name`: one read of the pool, and for an autoscaled pool
 * one transaction on `poolDemand/{pool}.{gateway}` (one read, at most one write). A report that
 * makes demand appear, or requests wait, reconciles the pool at once; any other is read by the
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
  // Only an autoscaled pool reads demand: a fixed one costs no write.
  if (!pool.spec.autoscale) return { status: 202, body: { accepted: true, name, autoscaled: false, applied: false } };
  const outcome = await deps.demand.record(name, report, (deps.now ?? Date.now)());
  if (outcome.kick) await kickPools(deps.bus, [name]);
  return { status: 202, body: { accepted: true, name, autoscaled: true, applied: outcome.applied } };
}
