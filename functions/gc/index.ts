/** Cloud Function `gc`: collects instances this installation created and no proxy owns (from `gc-ticks`). */
import { cloudEvent } from '@google-cloud/functions-framework';
import { pubSubHandler } from '../../shared/function-handler.js';
import { collectGarbage } from '../../shared/reconcile/gc.js';
import { InventoryCache } from '../../shared/reconcile/gc-inventory.js';
import { SweepCache } from '../../shared/reconcile/sweep-cache.js';

/** Kept while the instance is warm: a pass after the first reads only the proxies changed since. */
const owners = new SweepCache();
/** Kept likewise: a pass after the first reads only the inventory items changed since (relay-backed providers). */
const inventory = new InventoryCache();

cloudEvent(
  'gc',
  pubSubHandler('gc', async (rt) => {
    const reports = await collectGarbage({ ...rt, owners, inventory });
    rt.logger.info('gc pass finished', { reports });
  }),
);
