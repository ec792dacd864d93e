/** Cloud Function `check`: the reconciler, for a sweep page or a batch of named proxies from `proxy-checks`. */
import { cloudEvent } from '@google-cloud/functions-framework';
import { pubSubHandler } from '../../shared/function-handler.js';
import { handleCheckMessage } from '../../shared/reconcile/check.js';

cloudEvent(
  'check',
  pubSubHandler('check', (rt, message) => handleCheckMessage({ ...rt, countReplacing: rt.countReplacing }, message)),
);
