/** Cloud Function `gc`: collects instances this installation created and no proxy owns (from `gc-ticks`). */
import { cloudEvent } from '@google-cloud/functions-framework';
import { pubSubHandler } from '../../shared/function-handler.js';
import { collectGarbage } from '../../shared/reconcile/gc.js';
import { SweepCache } from '../../shared/reconcile/sweep-cache.js';

/** Kept while the instance is warm: a pass after the first reads only the proxies changed since. */
const owners = new SweepCache();

cloudEvent(
  'gc',
  pubSubHandler('gc', async (rt) => {
    const reports = await collectGarbage({ ...rt, owners });
    rt.logger.info('gc pass finished', { reports });
  }),
);
