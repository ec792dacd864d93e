/**
 * Zone operations: waiting on them (bounded), the insert operations that still say why a create
 * failed after `create` returned, and the lookups that name a refused placement field.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { PermanentError, RetryableError, type EgressError } from '../../errors.js';
import type { ComputeApi, GceOperation } from './compute.js';
import { decodeFailure, isNotFound, typedError } from './errors.js';
import { parseImage, type GcpPlacement } from './options.js';

/** What this process remembers of the last insert per name (the durable copy is the operation itself). */
export interface InsertRecord {
  zone: string;
  operation: string;
  proxy: string;
  installationId: string;
  specHash: string;
  placement: GcpPlacement;
}

/** The first pause after a `wait` that answered early, doubled up to MAX_PAUSE_MS. */
const FIRST_PAUSE_MS = 250;
const MAX_PAUSE_MS = 4000;
/** A `wait` that answered not-DONE sooner than this did not really wait. */
const EARLY_MS = 1000;

/**
 * Waits on an operation until it is DONE or `waitMs` have passed. `zoneOperations.wait` answers
 * after at most two minutes, DONE or not, and on an overloaded server "might return after zero seconds"
 * (https://cloud.google.com/compute/docs/reference/rest/v1/zoneOperations/wait):
 * after such an early answer the next call waits a growing pause, so no loop burns read quota.
 */
export async function settle(
  api: ComputeApi,
  zone: string,
  op: GceOperation,
  waitMs: number,
  now: () => number,
): Promise<GceOperation> {
  const deadline = now() + waitMs;
  let current = op;
  let pause = FIRST_PAUSE_MS;
  while (current.status !== 'DONE') {
    const left = deadline - now();
    if (left <= 0) break;
    const started = now();
    try {
      current = await api.waitOperation(zone, current.name, left);
    } catch (err) {
      const failure = decodeFailure(err);
      if (failure.network === 'timeout') break;
      throw typedError(failure, `waiting on operation ${current.name}`, 'compute.zoneOperations.get');
    }
    if (current.status === 'DONE' || now() - started >= EARLY_MS) continue;
    await sleep(Math.min(pause, Math.max(0, deadline - now())));
    pause = Math.min(pause * 2, MAX_PAUSE_MS);
  }
  return current;
}

/** The insert operations per instance name: this process's record, and the API's own on a miss. */
export class InsertBook {
  private readonly records = new Map<string, InsertRecord>();

  record(name: string, record: InsertRecord): void {
    this.records.set(name, record);
  }

  get(name: string): InsertRecord | undefined {
    return this.records.get(name);
  }

  drop(name: string): void {
    this.records.delete(name);
  }

  /** The newest insert operation for `name`, from any function instance (an aggregated search). */
  async latest(api: ComputeApi, name: string): Promise<GceOperation | undefined> {
    const record = this.records.get(name);
    if (record) {
      try {
        return await api.getOperation(record.zone, record.operation);
      } catch (err) {
        const failure = decodeFailure(err);
        if (!isNotFound(failure))
          throw typedError(failure, `get of operation ${record.operation}`, 'compute.zoneOperations.get');
        this.records.delete(name);
      }
    }
    const { operations, unreachable } = await this.search(api, name);
    const newest = operations.sort((a, b) => b.insertedAt - a.insertedAt)[0];
    if (!newest && unreachable.length > 0)
      throw new RetryableError(`operations of ${name} not seen, but ${unreachable.join(', ')} could not be read`);
    return newest;
  }

  /** Rule delete-idempotent for a failed create: what it leaves behind is a failed insert operation; delete those. */
  async forgetFailed(api: ComputeApi, name: string): Promise<void> {
    this.records.delete(name);
    const { operations } = await this.search(api, name);
    for (const op of operations.filter((o) => o.failure)) await this.forget(api, op);
  }

  /** Deletes one operation (NotFound is fine), so `get` no longer reports its failure. */
  async forget(api: ComputeApi, op: GceOperation): Promise<void> {
    if (this.records.get(op.target)?.operation === op.name) this.records.delete(op.target);
    try {
      await api.deleteOperation(op.zone, op.name);
    } catch (err) {
      const failure = decodeFailure(err);
      if (!isNotFound(failure))
        throw typedError(failure, `delete of operation ${op.name}`, 'compute.zoneOperations.delete');
    }
  }

  private async search(api: ComputeApi, name: string) {
    try {
      const r = await api.listOperations(`(operationType eq insert) (targetLink eq ".*/instances/${name}")`);
      return { ...r, operations: r.operations.filter((o) => o.type === 'insert' && o.target === name) };
    } catch (err) {
      throw typedError(decodeFailure(err), `search for operations of ${name}`, 'compute.globalOperations.list');
    }
  }
}

/**
 * A refused insert names its field only in prose, so the resources the placement refers to are
 * looked up in turn: the first one missing is the field (rule placement-field). Without a finding, or for an
 * error that is not Permanent or already names its field, the error is returned as it is. (A
 * missing network or subnetwork needs no look-up: Compute refuses it with a 400 naming the field,
 * which `typedError` maps.)
 */
export async function withField(api: ComputeApi, error: EgressError, p: GcpPlacement): Promise<EgressError> {
  if (error.code !== 'Permanent' || (error instanceof PermanentError && error.field)) return error;
  const checks: [string, () => Promise<unknown>, string][] = [
    ['spec.placement.zone', () => api.getZone(p.zone), `zone "${p.zone}" does not exist in project ${api.project}`],
    [
      'spec.placement.machineType',
      () => api.getMachineType(p.zone, p.machineType),
      `machine type "${p.machineType}" is not offered in zone ${p.zone}`,
    ],
    ['spec.placement.image', () => api.getImage(parseImage(p.image)), `image "${p.image}" does not exist`],
  ];
  for (const [field, lookup, message] of checks) {
    try {
      await lookup();
    } catch (err) {
      if (!isNotFound(decodeFailure(err))) return error;
      return new PermanentError(`${message} (${error.message})`, field, { cause: error });
    }
  }
  return error;
}
