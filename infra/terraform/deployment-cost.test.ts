/** shared/cost/deployment.ts prices what infra/terraform creates besides the proxies: its figures are the .tf files' own. */
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DEPLOYMENT } from '../../shared/cost/deployment.js';
import { readTerraformDir, type TerraformDir } from './hcl-files.js';

const dir = dirname(fileURLToPath(import.meta.url));
let tf: TerraformDir;
beforeAll(async () => {
  tf = await readTerraformDir(dir);
}, 30_000);

const block = z.tuple([z.record(z.string(), z.unknown())]);
const resource = (address: string) => z.record(z.string(), z.unknown()).parse(tf.resources.get(address));

describe('egress cost: the deployment lines match infra/terraform', () => {
  it('the region is variables.tf’s default', () => {
    const variables = z.record(z.string(), block).parse(tf.files.get('variables.tf')?.['variable']);
    expect(variables['region']?.[0]['default']).toBe(DEPLOYMENT.region);
  });

  it('the connector runs its minimum of instances at the provider’s default machine type', () => {
    const connector = resource('google_vpc_access_connector.functions');
    expect(connector['min_instances']).toBe(DEPLOYMENT.connector.minInstances);
    // Unset, the provider's default applies: e2-micro (registry: google_vpc_access_connector, machine_type).
    expect(connector['machine_type'] ?? 'e2-micro').toBe(DEPLOYMENT.connector.machineType);
  });

  it('the echo VM, its boot disk and its static address', () => {
    const variables = z.record(z.string(), block).parse(tf.files.get('variables.tf')?.['variable']);
    expect(String(variables['echo']?.[0]['type'])).toContain(`"${DEPLOYMENT.echo.machineType}"`);
    const echo = resource('google_compute_instance.echo');
    expect(echo['machine_type']).toBe('${var.echo.machine_type}');
    const disk = z.object({ initialize_params: block }).parse(z.tuple([z.unknown()]).parse(echo['boot_disk'])[0])
      .initialize_params[0];
    expect(disk).toMatchObject({ size: DEPLOYMENT.echo.diskGib, type: DEPLOYMENT.echo.diskType });
    expect(tf.resources.has('google_compute_address.echo')).toBe(true);
  });
});
