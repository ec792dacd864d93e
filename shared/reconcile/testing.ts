/** What the reconcile's table tests share: the policy their expected backoffs, polls and drains are written against. */
import type { Policy } from './decision.js';

export const TEST_POLICY: Policy = {
  unhealthyAfter: 3,
  neverReadyLimit: 3,
  backoffBaseMs: 10_000,
  backoffMaxMs: 600_000,
  pollMs: 2000,
  drainMs: 5000,
};
