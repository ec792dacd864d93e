/**
 * Cloud Function `relay-report`: stores relay heartbeats, inventory and command results (from
 * `relay-reports`), and checks the few proxies a report changed in the same invocation (so a
 * just-created proxy turns Ready without a hop through `check`).
 */
import { cloudEvent } from '@google-cloud/functions-framework';
import { pubSubHandler } from '../../shared/function-handler.js';
import { checkAndFollowUp } from '../../shared/reconcile/check.js';
import { handleRelayReport } from '../../shared/relay-report.js';

cloudEvent(
  'relay-report',
  pubSubHandler('relay-report', (rt, message) => {
    rt.warnUnsignedRelayMessages();
    const check = (names: string[]) => checkAndFollowUp(rt, { names });
    return handleRelayReport({ ...rt, check }, message);
  }),
);
