/** Aggregated instance listing for the gcp provider, with a fallback when the API refuses the filter. */
import type { ComputeApi } from './compute.js';
import { decodeFailure, typedError } from './errors.js';

/**
 * An aggregated list with a server-side filter; when the API refuses the filter (400), the whole
 * list without one: every caller filters the items again itself.
 */
export async function listFiltered(api: ComputeApi, filter: string, what: string) {
  try {
    return await api.listInstances(filter);
  } catch (err) {
    const failure = decodeFailure(err);
    if (failure.status !== 400) throw typedError(failure, what, 'compute.instances.list');
  }
  try {
    return await api.listInstances('');
  } catch (err) {
    throw typedError(decodeFailure(err), `${what} (without a filter)`, 'compute.instances.list');
  }
}
