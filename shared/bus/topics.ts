/** The Pub/Sub topic names the code publishes to, in one place; `infra/topology.yaml` declares the same set. */

/**
 * Every topic of `infra/topology.yaml`, by role (`infra/local/topics.test.ts` checks the two agree,
 * topic by topic and push target by push target).
 */
export const TOPICS = {
  /** Apply and delete requests (`shared/requests.ts`), pushed to `requests`. */
  proxyRequests: 'proxy-requests',
  /** Sweeps, kicks and pool checks, pushed to `check` (`shared/reconcile/check.ts`). */
  proxyChecks: 'proxy-checks',
  /** Scheduled GC passes, pushed to `gc`. */
  gcTicks: 'gc-ticks',
  /** Commands to relays, one pull subscription per relay id (filtered on the `relay` attribute). */
  relayCommands: 'relay-commands',
  /** Reports from relays, pushed to `relay-report`. */
  relayReports: 'relay-reports',
  /** Messages that exhausted their delivery attempts. */
  deadLetters: 'dead-letters',
  /** Scheduled provider health checks, pushed to `health`. */
  healthTicks: 'health-ticks',
} as const;

export type TopicName = (typeof TOPICS)[keyof typeof TOPICS];
