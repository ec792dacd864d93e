/** Cloud Function `relay-report`: stores relay heartbeats, inventory and command results (from `relay-reports`). */
import { cloudEvent, type CloudEvent } from '@google-cloud/functions-framework';
import { decodeCloudEvent } from '../../shared/bus/message.js';
import { handleRelayReport } from '../../shared/relay-report.js';
import { getRuntime } from '../../shared/runtime.js';

cloudEvent('relay-report', async (event: CloudEvent<unknown>) => {
  await handleRelayReport(getRuntime('relay-report'), decodeCloudEvent(event));
});
