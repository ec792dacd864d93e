/** Cloud Function `gc`: collects instances this installation created and no proxy owns (from `gc-ticks`). */
import { cloudEvent } from '@google-cloud/functions-framework';
import { pubSubHandler } from '../../shared/function-handler.js';
import { collectGarbage } from '../../shared/reconcile/gc.js';

cloudEvent(
  'gc',
  pubSubHandler('gc', async (rt) => {
    const reports = await collectGarbage(rt);
    rt.logger.info('gc pass finished', { reports });
  }),
);
