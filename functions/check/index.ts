/** Cloud Function `check`: the reconciler, for a sweep page or a batch of named proxies from `proxy-checks`. */
import { cloudEvent, type CloudEvent } from '@google-cloud/functions-framework';
import { decodeCloudEvent } from '../../shared/bus/message.js';
import { RetryableError, ValidationError } from '../../shared/errors.js';
import { parseCheckMessage, runCheck } from '../../shared/reconcile/check.js';
import { getRuntime } from '../../shared/runtime.js';

/** Longer waits are left to the next sweep rather than held in Pub/Sub redelivery. */
const MAX_REDELIVERY_WAIT_MS = 30_000;

cloudEvent('check', async (event: CloudEvent<unknown>) => {
  const rt = getRuntime('check');
  const message = decodeCloudEvent(event);
  let check;
  try {
    check = parseCheckMessage(message.json);
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    rt.logger.warn('check message rejected', { messageId: message.id, field: err.field, reason: err.reason });
    return;
  }
  const { recheckAfterMs } = await runCheck({ ...rt, countReplacing: rt.countReplacing }, check);
  // Throwing makes Pub/Sub redeliver with the subscription's backoff: the way to "check again soon".
  if (recheckAfterMs !== undefined && recheckAfterMs <= MAX_REDELIVERY_WAIT_MS) {
    throw new RetryableError('some proxies need another look soon', recheckAfterMs);
  }
});
