/** Cloud Function `delete`: records `delete` requests from `proxy-requests` and kicks a check. */
import { cloudEvent } from '@google-cloud/functions-framework';
import { pubSubHandler } from '../../shared/function-handler.js';
import { handleRequest } from '../../shared/requests.js';

cloudEvent(
  'delete',
  pubSubHandler('delete', (rt, message) => handleRequest(rt, 'delete', message)),
);
