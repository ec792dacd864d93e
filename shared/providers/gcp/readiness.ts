/** The state of a RUNNING VM whose guest has not reported the proxy ready (READY_ATTRIBUTE). */
import type { Instance } from '../contract.js';
import { READY_ATTRIBUTE } from './cloud-init.js';
import type { GceInstance } from './resources.js';

/**
 * Pending while the guest may still report ready; Failed, saying why, once `readySeconds` have
 * passed since the VM last started (`lastStartTimestamp`, else `createdAt`).
 */
export function notReady(
  gce: GceInstance,
  createdAt: number,
  now: number,
  readySeconds: number,
): Pick<Instance, 'state' | 'error'> {
  const started = Date.parse(gce.lastStartTimestamp ?? '') || createdAt;
  const waited = Math.round((now - started) / 1000);
  if (waited < readySeconds) return { state: 'Pending' };
  const message =
    `instance ${gce.name} has run ${waited} s since it started without setting guest attribute ` +
    `${READY_ATTRIBUTE} (readySeconds ${readySeconds}): cloud-init did not bring the proxy up; ` +
    'its serial port output says why';
  return { state: 'Failed', error: { code: 'Retryable', message } };
}
