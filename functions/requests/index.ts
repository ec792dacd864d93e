/**
 * Cloud Function `requests`: records apply and delete requests from `proxy-requests`, then checks
 * the proxy in the same invocation (the provider's create or delete starts here, without a hop
 * through the `check` function).
 */
import { cloudEvent } from '@google-cloud/functions-framework';
import { pubSubHandler } from '../../shared/function-handler.js';
import { checkAndFollowUp } from '../../shared/reconcile/check.js';
import { handleRequest } from '../../shared/requests.js';

cloudEvent(
  'requests',
  pubSubHandler('requests', (rt, message) =>
    handleRequest({ ...rt, check: (names) => checkAndFollowUp(rt, { names }) }, message),
  ),
);
