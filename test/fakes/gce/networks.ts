/**
 * The VPC networks the fake's projects hold, and how `instances.insert` resolves a network
 * interface against them, as instances.insert documents `networkInterfaces[].network` and
 * `.subnetwork` (https://cloud.google.com/compute/docs/reference/rest/v1/instances/insert):
 * "If neither the network nor the subnetwork is specified, the default network
 * global/networks/default is used. If the selected project doesn't have the default network, you
 * must specify a network or subnet"; "If the network is in auto subnet mode, specifying the
 * subnetwork is optional. If the network is in custom subnet mode, specifying the subnetwork is
 * required"; a subnetwork may be named by a partial URL of another (Shared-VPC host) project.
 * A reference to a network or subnetwork that does not exist is a 400 `invalid` on the field, not
 * a 404 ("Invalid value for field 'resource.networkInterfaces[0].network': ''. The referenced
 * network resource cannot be found.", quoted in btcpayserver/btcpayserver-googlecloud#7 and
 * GoogleCloudPlatform/magic-modules#18826; the subnetwork's in hashicorp/terraform-provider-google#2140);
 * a subnetwork of another network is a 400 `badRequest` ('Subnetwork "…" is not valid for Network
 * "…".', hashicorp/terraform-provider-google#7895); a custom-mode network without a subnetwork is
 * refused on `resource.networkInterfaces[0]` (hashicorp/terraform-provider-google#175). The wording
 * for a subnetwork in another region is not quoted anywhere we found (unverified).
 */
import { ALL_ZONES, regionOfZone } from './catalog.js';
import { ComputeError, invalidField } from './errors.js';

const NIC = 'resource.networkInterfaces[0]';

/** One VPC network. */
export interface FakeNetwork {
  /** The project holding it; undefined: every project has one of this name (the default network). */
  project?: string | undefined;
  name: string;
  /** Auto mode: a subnetwork named like the network in every region. */
  auto?: boolean | undefined;
  /** Custom-mode subnetworks, `region/name` (`us-central1/proxies`). */
  subnetworks?: string[] | undefined;
}

/** What a project has when a test says nothing: the auto-mode `default` network. */
export const DEFAULT_NETWORKS: FakeNetwork[] = [{ name: 'default', auto: true }];

const NETWORK_PATH = /(?:projects\/([^/]+)\/)?global\/networks\/([^/]+)$/;
const SUBNETWORK_PATH = /(?:projects\/([^/]+)\/)?regions\/([^/]+)\/subnetworks\/([^/]+)$/;

/** The interface's network and subnetwork as Compute records them on the instance (full paths). */
export interface ResolvedNic {
  network: string;
  subnetwork: string;
}

/**
 * Resolves the first network interface of an insert in `zone` of `project`.
 *
 * @throws ComputeError 400 for a network or subnetwork the project (or host project) does not have, a
 *   subnetwork in another region or of another network, or a custom-mode network without one
 */
export function resolveNic(
  networks: FakeNetwork[],
  project: string,
  zone: string,
  nic: { network?: string | undefined; subnetwork?: string | undefined } | undefined,
): ResolvedNic {
  const region = regionOfZone(zone) ?? '';
  const find = (p: string, name: string) => networks.find((n) => n.name === name && (n.project ?? p) === p);
  if (nic?.subnetwork) {
    const m = SUBNETWORK_PATH.exec(nic.subnetwork);
    const [p, r, s] = [m?.[1] ?? project, m?.[2] ?? region, m?.[3] ?? nic.subnetwork];
    const subnetworkPath = `projects/${p}/regions/${r}/subnetworks/${s}`;
    if (r !== region)
      throw invalidField(`${NIC}.subnetwork`, nic.subnetwork, 'Subnetwork must be in the region of the instance.');
    const owner = networks.find((n) => (n.project ?? p) === p && subnetworksOf(n).includes(`${r}/${s}`));
    if (!owner)
      throw invalidField(`${NIC}.subnetwork`, nic.subnetwork, 'The referenced subnetwork resource cannot be found.');
    const networkPath = `projects/${p}/global/networks/${owner.name}`;
    if (nic.network) {
      const given = NETWORK_PATH.exec(nic.network);
      if ((given?.[1] ?? project) !== p || given?.[2] !== owner.name)
        throw new ComputeError(
          400,
          'badRequest',
          `Subnetwork "${subnetworkPath}" is not valid for Network "${given?.[2] ?? nic.network}".`,
        );
    }
    return { network: networkPath, subnetwork: subnetworkPath };
  }
  const given = NETWORK_PATH.exec(nic?.network ?? 'global/networks/default');
  const [p, name] = [given?.[1] ?? project, given?.[2] ?? ''];
  const network = find(p, name);
  if (!network)
    throw invalidField(`${NIC}.network`, nic?.network ?? '', 'The referenced network resource cannot be found.');
  if (!network.auto) throw invalidField(NIC, '', 'Subnetwork should be specified for custom subnetmode network');
  return {
    network: `projects/${p}/global/networks/${name}`,
    subnetwork: `projects/${p}/regions/${region}/subnetworks/${name}`,
  };
}

function subnetworksOf(n: FakeNetwork): string[] {
  if (!n.auto) return n.subnetworks ?? [];
  const regions = [...new Set(ALL_ZONES.map((z) => regionOfZone(z) ?? ''))];
  return [...regions.map((r) => `${r}/${n.name}`), ...(n.subnetworks ?? [])];
}
