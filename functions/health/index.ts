/** Cloud Function `health`: the provider-health monitor and the fleet gauges, on every tick from `health-ticks`. */
import { cloudEvent } from '@google-cloud/functions-framework';
import { pubSubHandler } from '../../shared/function-handler.js';
import { checkProviders, FleetGauge } from '../../shared/health.js';

/** This instance's gauge: counted on its first tick, then every five minutes. */
const fleetGauge = new FleetGauge();

cloudEvent(
  'health',
  pubSubHandler('health', async (rt) => {
    await checkProviders(rt);
    await fleetGauge.record(rt);
  }),
);
