/** Cloud Function `check`: the reconciler, for a sweep page or a batch of named proxies from `proxy-checks`. */
import { cloudEvent } from '@google-cloud/functions-framework';
import { RetryableError, ValidationError } from '../../shared/errors.js';
import { pubSubHandler } from '../../shared/function-handler.js';
import { parseCheckMessage, runCheck } from '../../shared/reconcile/check.js';

/** Longer waits are left to the next sweep rather than held in Pub/Sub redelivery. */
const MAX_REDELIVERY_WAIT_MS = 30_000;

cloudEvent(
  'check',
  pubSubHandler('check', async (rt, message) => {
    let check;
    try {
      check = parseCheckMessage(message.json);
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      rt.logger.warn('check message rejected', { messageId: message.id, field: err.field, reason: err.reason });
      return 'rejected';
    }
    const { recheckAfterMs } = await runCheck({ ...rt, countReplacing: rt.countReplacing }, check);
    // Throwing makes Pub/Sub redeliver with the subscription's backoff: the way to "check again soon".
    if (recheckAfterMs !== undefined && recheckAfterMs <= MAX_REDELIVERY_WAIT_MS) {
      throw new RetryableError('some proxies need another look soon', recheckAfterMs);
    }
    return 'done';
  }),
);
