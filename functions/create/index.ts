/** Cloud Function `create`: records `apply` requests from `proxy-requests` and kicks a check. */
import { cloudEvent, type CloudEvent } from '@google-cloud/functions-framework';
import { decodeCloudEvent } from '../../shared/bus/message.js';
import { handleRequest } from '../../shared/requests.js';
import { getRuntime } from '../../shared/runtime.js';

cloudEvent('create', async (event: CloudEvent<unknown>) => {
  await handleRequest(getRuntime('create'), 'apply', decodeCloudEvent(event));
});
