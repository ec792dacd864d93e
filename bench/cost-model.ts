/**
 * Public list prices (USD) and the monthly bill of a fleet's steady state. The prices are the list
 * prices of the pages named in `PRICE_SOURCES`, recorded here on 2026-11-29 (the bench machine has
 * no network: they were not fetched by the bench); update prices, sources and date together.
 */
import type { Counts } from './counting.js';

/** When the prices below were recorded. */
export const PRICES_RECORDED_ON = '2026-11-29';

/** Cloud Firestore (Standard edition), multi-region nam5; a US region (us-central1) costs half. */
const FIRESTORE = { readPer100k: 0.06, writePer100k: 0.18, deletePer100k: 0.02 };
/** Firestore's free quota is per day. */
const FIRESTORE_FREE_PER_DAY = { reads: 50_000, writes: 20_000, deletes: 20_000 };
/** Pub/Sub throughput: $40 per TiB after 10 GiB a month; at least 1000 bytes per publish, push or pull. */
const PUBSUB = { perTiB: 40, freeGiB: 10 };
/**
 * Cloud Run functions (2nd gen) bill as Cloud Run services with request-based billing, Tier 1:
 * requests, vCPU-seconds and GiB-seconds after a monthly free tier.
 */
const RUN = {
  perMillionRequests: 0.4,
  freeRequests: 2_000_000,
  perVcpuSecond: 0.000024,
  freeVcpuSeconds: 180_000,
  perGibSecond: 0.0000025,
  freeGibSeconds: 360_000,
};
/** The check function's size (infra/topology.yaml: 512 MB) and its CPU (512 MB → 0.333 vCPU). */
const FUNCTION_SIZE = { gib: 0.5, vcpu: 0.333 };

export const PRICE_SOURCES = [
  `Firestore: https://cloud.google.com/firestore/pricing (free quota; reads $${FIRESTORE.readPer100k}, writes $${FIRESTORE.writePer100k}, deletes $${FIRESTORE.deletePer100k} per 100,000 documents, multi-region; regional US locations are half)`,
  `Pub/Sub: https://cloud.google.com/pubsub/pricing ($${PUBSUB.perTiB}/TiB, first ${PUBSUB.freeGiB} GiB free, min 1000 bytes per request)`,
  `Cloud Run functions: https://cloud.google.com/run/pricing (Tier 1, request-based: $${RUN.perMillionRequests}/M requests, $${RUN.perVcpuSecond}/vCPU-s, $${RUN.perGibSecond}/GiB-s after the free tier)`,
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
    (over(month(perCycle.reads), FIRESTORE_FREE_PER_DAY.reads * days) / 100_000) * FIRESTORE.readPer100k +
    (over(month(perCycle.writes), FIRESTORE_FREE_PER_DAY.writes * days) / 100_000) * FIRESTORE.writePer100k +
    (over(month(perCycle.deletes), FIRESTORE_FREE_PER_DAY.deletes * days) / 100_000) * FIRESTORE.deletePer100k;
  const pubsub = (over(month(perCycle.pubsubBytes), PUBSUB.freeGiB * 2 ** 30) / 2 ** 40) * PUBSUB.perTiB;
  const invocations = (over(month(perCycle.invocations), RUN.freeRequests) / 1e6) * RUN.perMillionRequests;
  // Billing rounds each request up to 100 ms.
  const seconds = month(perCycle.invocationMs) / 1000;
  const compute =
    over(seconds * FUNCTION_SIZE.vcpu, RUN.freeVcpuSeconds) * RUN.perVcpuSecond +
    over(seconds * FUNCTION_SIZE.gib, RUN.freeGibSeconds) * RUN.perGibSecond;
  return { cycles, firestore, pubsub, invocations, compute, total: firestore + pubsub + invocations + compute };
}
