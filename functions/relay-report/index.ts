/** Cloud Function `relay-report`: stores relay heartbeats, inventory and command results (from `relay-reports`). */
import { cloudEvent } from '@google-cloud/functions-framework';
import { pubSubHandler } from '../../shared/function-handler.js';
import { handleRelayReport } from '../../shared/relay-report.js';

cloudEvent(
  'relay-report',
  pubSubHandler('relay-report', (rt, message) => {
    rt.warnUnsignedRelayMessages();
    return handleRelayReport(rt, message);
  }),
);
