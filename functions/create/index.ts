/** Cloud Function `create`: records `apply` requests from `proxy-requests` and kicks a check. */
import { cloudEvent } from '@google-cloud/functions-framework';
import { pubSubHandler } from '../../shared/function-handler.js';
import { handleRequest } from '../../shared/requests.js';

cloudEvent(
  'create',
  pubSubHandler('create', (rt, message) => handleRequest(rt, 'apply', message)),
);
