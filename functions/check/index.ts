/** Cloud Function `check`: the reconciler, for a sweep page or a batch of named proxies from `proxy-checks`. */
import { cloudEvent } from '@google-cloud/functions-framework';
import { pubSubHandler } from '../../shared/function-handler.js';
import { handleCheckMessage } from '../../shared/reconcile/check.js';
import { FollowUpLedger } from '../../shared/reconcile/follow-up.js';
import { SweepCache } from '../../shared/reconcile/sweep-cache.js';

/** Kept while the instance is warm: a sweep page it served before costs only what changed since. */
const sweepCache = new SweepCache();
/** Kept while the instance is warm: its follow-ups on their way, so that chains of looks merge. */
const followUps = new FollowUpLedger();

cloudEvent(
  'check',
  pubSubHandler('check', (rt, message) => handleCheckMessage({ ...rt, sweepCache, followUps }, message)),
);
