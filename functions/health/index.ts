/** Cloud Function `health`: the provider-health monitor, on every tick from `health-ticks`. */
import { cloudEvent } from '@google-cloud/functions-framework';
import { checkProviders } from '../../shared/health.js';
import { getRuntime } from '../../shared/runtime.js';

cloudEvent('health', async () => {
  await checkProviders(getRuntime('health'));
});
