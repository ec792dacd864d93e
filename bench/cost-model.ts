/**
 * The monthly bill of a fleet's steady state at the public list prices of the repository's dated
 * catalogue (`shared/cost/prices-2026-12.json`, each price with its source page; the bench machine
 * has no network: they are not fetched by the bench).
 */
import { CATALOGUE } from '../shared/cost/catalogue.js';
import type { Counts } from './counting.js';

/** When the prices below were recorded. */
export const PRICES_RECORDED_ON = CATALOGUE.recordedOn;

const { firestore: FIRESTORE, pubsub: PUBSUB, cloudRun: RUN } = CATALOGUE;
/** The check function's size (infra/topology.yaml: 512 MB) and its CPU (512 MB → 0.333 vCPU). */
const FUNCTION_SIZE = { gib: 0.5, vcpu: 0.333 };

export const PRICE_SOURCES = [
  `Firestore: ${FIRESTORE.source} (free quota; reads $${FIRESTORE.readPer100k}, writes $${FIRESTORE.writePer100k}, deletes $${FIRESTORE.deletePer100k} per 100,000 documents, multi-region; regional US locations are half)`,
  `Pub/Sub: ${PUBSUB.source} ($${PUBSUB.perTiB}/TiB, first ${PUBSUB.freeGiB} GiB free, min 1000 bytes per request)`,
  `Cloud Run functions: ${RUN.source} (Tier 1, request-based: $${RUN.perMillionRequests}/M requests, $${RUN.perVcpuSecond}/vCPU-s, $${RUN.perGibSecond}/GiB-s after the free tier)`,
];

export interface MonthlyCost {
  cycles: number;
  firestore: number;
  pubsub: number;
  invocations: number;
  /** Estimate: from the invocations' wall time in the bench (emulator latencies). */
  compute: number;
  total: number;
}

const over = (usage: number, free: number) => Math.max(0, usage - free);

/**
 * @param perCycle - everything one check cycle costs, the whole fleet
 * @param intervalSeconds - the check interval
 */
export function monthlyCost(perCycle: Counts, intervalSeconds: number): MonthlyCost {
  const days = 30;
  const cycles = (days * 86_400) / intervalSeconds;
  const month = (v: number) => v * cycles;
  const firestore =
    (over(month(perCycle.reads), FIRESTORE.freePerDay.reads * days) / 100_000) * FIRESTORE.readPer100k +
    (over(month(perCycle.writes), FIRESTORE.freePerDay.writes * days) / 100_000) * FIRESTORE.writePer100k +
    (over(month(perCycle.deletes), FIRESTORE.freePerDay.deletes * days) / 100_000) * FIRESTORE.deletePer100k;
  const pubsub = (over(month(perCycle.pubsubBytes), PUBSUB.freeGiB * 2 ** 30) / 2 ** 40) * PUBSUB.perTiB;
  const invocations = (over(month(perCycle.invocations), RUN.freeRequests) / 1e6) * RUN.perMillionRequests;
  // Billing rounds each request up to 100 ms.
  const seconds = month(perCycle.invocationMs) / 1000;
  const compute =
    over(seconds * FUNCTION_SIZE.vcpu, RUN.freeVcpuSeconds) * RUN.perVcpuSecond +
    over(seconds * FUNCTION_SIZE.gib, RUN.freeGibSeconds) * RUN.perGibSecond;
  return { cycles, firestore, pubsub, invocations, compute, total: firestore + pubsub + invocations + compute };
}
