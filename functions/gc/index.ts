/** Cloud Function `gc`: collects instances this installation created and no proxy owns (from `gc-ticks`). */
import { cloudEvent } from '@google-cloud/functions-framework';
import { collectGarbage } from '../../shared/reconcile/gc.js';
import { getRuntime } from '../../shared/runtime.js';

cloudEvent('gc', async () => {
  const rt = getRuntime('gc');
  const reports = await collectGarbage(rt);
  rt.logger.info('gc pass finished', { reports });
});
