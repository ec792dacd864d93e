/** Cloud Function `health`: the provider-health monitor and the fleet gauges, on every tick from `health-ticks`. */
import { cloudEvent } from '@google-cloud/functions-framework';
import { pubSubHandler } from '../../shared/function-handler.js';
import { checkProviders, recordFleetMetrics } from '../../shared/health.js';

cloudEvent(
  'health',
  pubSubHandler('health', async (rt) => {
    await checkProviders(rt);
    await recordFleetMetrics(rt);
  }),
);
