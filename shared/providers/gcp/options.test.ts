/** gcp options and placement: defaults, validation naming the field, images that cannot run cloud-init. */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../errors.js';
import { parseGcpOptions, resolveGcpPlacement } from './options.js';

const options = parseGcpOptions({ project: 'my-project', zone: 'us-central1-a' }, 'config.providers.0');
const fieldOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ValidationError) return err.field;
    throw err;
  }
  return undefined;
};

describe('parseGcpOptions', () => {
  it('applies the defaults: an Ubuntu image (it runs cloud-init), e2-micro, the default network, port 3128, probes over the VPC', () => {
    expect(options).toMatchObject({
      probeVia: 'internal',
      protocol: 'https',
      machineType: 'e2-micro',
      image: 'projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64',
      network: 'default',
      tags: ['egress-proxy'],
      spot: false,
      proxyPort: 3128,
    });
  });

  it.each([
    [{ zone: 'us-central1-a' }, 'config.providers.3.options.project'],
    [{ project: 'my-project' }, 'config.providers.3.options.zone'],
    [{ project: 'my-project', zone: 'us-central1' }, 'config.providers.3.options.zone'],
    [
      { project: 'my-project', zone: 'us-central1-a', keyFile: '/k.json', protocol: 'http' },
      'config.providers.3.options.keyFile',
    ],
    [
      { project: 'my-project', zone: 'us-central1-a', image: 'projects/debian-cloud/global/images/family/debian-12' },
      'config.providers.3.options.image',
    ],
    [{ project: 'my-project', zone: 'us-central1-a', regoin: 'x' }, 'config.providers.3.options.regoin'],
    [{ project: 'my-project', zone: 'us-central1-a', probeVia: 'nat' }, 'config.providers.3.options.probeVia'],
  ])('%j is refused naming %s', (raw, field) => {
    expect(fieldOf(() => parseGcpOptions(raw, 'config.providers.3'))).toBe(field);
  });
});

describe('resolveGcpPlacement', () => {
  it('completes a placement with the defaults, deterministically (tags sorted) and fully qualified', () => {
    const allowing = { ...options, placement: { networks: [], subnetworks: ['proxies'], tags: ['a', 'b'] } };
    const a = resolveGcpPlacement({ zone: 'europe-west1-b', tags: ['b', 'a'], subnetwork: 'proxies' }, allowing);
    expect(a).toEqual({
      zone: 'europe-west1-b',
      machineType: 'e2-micro',
      image: 'projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64',
      network: 'global/networks/default',
      subnetwork: 'regions/europe-west1/subnetworks/proxies',
      tags: ['a', 'b'],
      spot: false,
      diskSizeGb: 10,
    });
    expect(resolveGcpPlacement({ tags: ['a', 'b'], zone: 'europe-west1-b', subnetwork: 'proxies' }, allowing)).toEqual(
      a,
    );
  });

  it.each([
    [{ region: 'us-central1' }, 'spec.placement.region'],
    [{ zone: 'nowhere' }, 'spec.placement.zone'],
    [{ machineType: 'E2 Micro' }, 'spec.placement.machineType'],
    [{ image: 'ubuntu' }, 'spec.placement.image'],
    [{ image: 'projects/cos-cloud/global/images/family/cos-stable' }, 'spec.placement.image'],
    [{ spot: 'yes' }, 'spec.placement.spot'],
    [{ tags: ['Not A Tag'] }, 'spec.placement.tags.0'],
    [{ diskSizeGb: 5 }, 'spec.placement.diskSizeGb'],
    [{ zone: 'us-east1-b', subnetwork: 'regions/us-central1/subnetworks/x' }, 'spec.placement.subnetwork'],
  ])('%j is refused naming %s', (placement, field) => {
    expect(fieldOf(() => resolveGcpPlacement(placement, options))).toBe(field);
  });

  it('admits only image projects known to run cloud-init: an allow-list, widened by cloudInitImageProjects', () => {
    // Not debian, cos or windows (a deny-list would let it through), and no cloud-init in its GCE images.
    const rocky = { image: 'projects/rocky-linux-cloud/global/images/family/rocky-linux-9' };
    expect(fieldOf(() => resolveGcpPlacement(rocky, options))).toBe('spec.placement.image');
    expect(() => resolveGcpPlacement(rocky, options)).toThrow(/not known to run cloud-init .*cloudInitImageProjects/);
    const custom = { image: 'projects/my-images/global/images/family/proxy-base' };
    const widened = parseGcpOptions(
      { project: 'my-project', zone: 'us-central1-a', cloudInitImageProjects: ['my-images'] },
      'config.providers.0',
    );
    expect(resolveGcpPlacement(custom, widened).image).toBe(custom.image);
    expect(resolveGcpPlacement({ image: 'projects/ubuntu-os-pro-cloud/global/images/family/x' }, options)).toBeTruthy();
  });

  it.each([
    [
      { network: 'internal-vpc' },
      'spec.placement.network',
      /neither the provider's network nor in its options\.placement\.networks \(allowed: default\)/,
    ],
    [{ subnetwork: 'proxies' }, 'spec.placement.subnetwork', /options\.placement\.subnetworks \(allowed: none\)/],
    [{ tags: ['allow-ssh'] }, 'spec.placement.tags', /tag allow-ssh .*\(allowed: egress-proxy\)/],
  ])('%j beyond the provider’s network, subnetwork and tags is refused naming %s', (placement, field, reason) => {
    expect(() => resolveGcpPlacement(placement, options)).toThrow(
      expect.objectContaining({ code: 'Validation', field }),
    );
    expect(() => resolveGcpPlacement(placement, options)).toThrow(reason);
  });

  it('options.placement lists what a placement may name besides the defaults, in any spelling of the same resource', () => {
    const bounded = parseGcpOptions(
      {
        project: 'my-project',
        zone: 'us-central1-a',
        placement: {
          networks: ['internal-vpc'],
          subnetworks: ['regions/us-central1/subnetworks/proxies'],
          tags: ['t'],
        },
      },
      'config.providers.0',
    );
    expect(resolveGcpPlacement({ network: 'projects/my-project/global/networks/internal-vpc' }, bounded).network).toBe(
      'projects/my-project/global/networks/internal-vpc',
    );
    expect(resolveGcpPlacement({ network: 'default', tags: ['t', 'egress-proxy'] }, bounded).tags).toEqual([
      'egress-proxy',
      't',
    ]);
    expect(resolveGcpPlacement({ subnetwork: 'proxies' }, bounded).subnetwork).toBe(
      'regions/us-central1/subnetworks/proxies',
    );
    // The same short name in another region is another subnetwork.
    expect(fieldOf(() => resolveGcpPlacement({ zone: 'europe-west1-b', subnetwork: 'proxies' }, bounded))).toBe(
      'spec.placement.subnetwork',
    );
    expect(
      fieldOf(() =>
        parseGcpOptions({ project: 'my-project', zone: 'us-central1-a', placement: { tags: ['A B'] } }, 'c'),
      ),
    ).toBe('c.options.placement.tags.0');
  });

  it('an unknown key names itself and lists the known ones', () => {
    expect(() => resolveGcpPlacement({ bindAddress: '127.0.0.1' }, options)).toThrow(
      /spec\.placement\.bindAddress: unknown key .*zone, machineType, image/,
    );
  });
});
