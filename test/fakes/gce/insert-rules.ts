/**
 * instances.insert's checks of `scheduling`, `serviceAccounts` and `accessConfigs`, as Compute
 * refuses them (400 `invalid` on the field). The references and the wording:
 * - A Spot or preemptible VM cannot restart automatically: "Invalid value for field
 *   'resource.scheduling.preemptible': 'true'. Scheduling must have preemptible be false when
 *   AutomaticRestart is true." (quoted in elasticluster/elasticluster#568 and
 *   percona/mongo_terraform_ansible#34; the same rule for `provisioningModel: SPOT` is taken to read
 *   alike, unverified).
 * - `preemptible` needs the SPOT model: "Invalid value for field
 *   'resource.scheduling.provisioningModel': 'STANDARD'. For preemptible, only allowed
 *   provisioning_model value is SPOT" (skypilot-org/skypilot#3235).
 * - A termination action needs Spot: "You cannot specify a termination action for a VM instance
 *   that has the standard provisioning model (default)…" (GoogleCloudPlatform/cluster-toolkit#4435).
 * - "Only one service account per VM instance is supported", and "Currently, only one access config,
 *   ONE_TO_ONE_NAT, is supported" (instances resource,
 *   https://cloud.google.com/compute/docs/reference/rest/v1/instances); the wording of those two
 *   refusals is the fake's own (unverified).
 */
import { invalidField } from './errors.js';
import type { InsertBody } from './insert-body.js';

const SCHEDULING = 'resource.scheduling';
/** A field's value as Compute quotes it in a refusal. */
const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

/** The insert's scheduling, refused as Compute refuses it. */
export function checkScheduling(body: InsertBody): void {
  const s = body.scheduling ?? {};
  const model = typeof s['provisioningModel'] === 'string' ? s['provisioningModel'] : 'STANDARD';
  const preemptible = s['preemptible'] === true;
  if (!['STANDARD', 'SPOT'].includes(model))
    throw invalidField(`${SCHEDULING}.provisioningModel`, model, 'Must be one of STANDARD, SPOT.');
  if (preemptible && model !== 'SPOT' && s['provisioningModel'] !== undefined)
    throw invalidField(
      `${SCHEDULING}.provisioningModel`,
      model,
      'For preemptible, only allowed provisioning_model value is SPOT',
    );
  const spot = preemptible || model === 'SPOT';
  // automaticRestart defaults to true for a standard VM, to false for a Spot one.
  if (spot && s['automaticRestart'] === true)
    throw invalidField(
      `${SCHEDULING}.preemptible`,
      'true',
      'Scheduling must have preemptible be false when AutomaticRestart is true.',
    );
  const action = s['instanceTerminationAction'];
  if (action !== undefined && !spot)
    throw invalidField(
      `${SCHEDULING}.instanceTerminationAction`,
      text(action),
      'You cannot specify a termination action for a VM instance that has the standard provisioning model (default). To use instance termination action, the VM instance must use the Spot or Reservation-Bound provisioning model.',
    );
  if (action !== undefined && action !== 'STOP' && action !== 'DELETE')
    throw invalidField(`${SCHEDULING}.instanceTerminationAction`, text(action), 'Must be one of STOP, DELETE.');
}

/** At most one service account, each with an email. */
export function checkServiceAccounts(body: InsertBody): void {
  const accounts = Array.isArray(body['serviceAccounts']) ? (body['serviceAccounts'] as unknown[]) : [];
  if (accounts.length > 1)
    throw invalidField(
      'resource.serviceAccounts',
      String(accounts.length),
      'Only one service account per VM instance is supported.',
    );
  const email = (accounts[0] as { email?: unknown } | undefined)?.email;
  if (accounts.length === 1 && (typeof email !== 'string' || email === ''))
    throw invalidField('resource.serviceAccounts[0].email', '', 'A service account email (or "default") is required.');
}

/** The first interface's access configs: none (no external IP) or one ONE_TO_ONE_NAT. */
export function accessConfigsOf(body: InsertBody): { name?: unknown; type?: unknown }[] {
  const nic = body.networkInterfaces?.[0];
  const configs: unknown = nic?.['accessConfigs'];
  return Array.isArray(configs) ? (configs as { name?: unknown; type?: unknown }[]) : [];
}

export function checkAccessConfigs(body: InsertBody): void {
  const configs = accessConfigsOf(body);
  const field = 'resource.networkInterfaces[0].accessConfigs';
  if (configs.length > 1)
    throw invalidField(field, String(configs.length), 'Only one access config, ONE_TO_ONE_NAT, is supported.');
  const type = configs[0]?.type ?? 'ONE_TO_ONE_NAT';
  if (configs.length === 1 && type !== 'ONE_TO_ONE_NAT')
    throw invalidField(`${field}[0].type`, text(type), 'Only one access config, ONE_TO_ONE_NAT, is supported.');
}
