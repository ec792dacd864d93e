/** The gcp provider's `options` and placement: zod schemas, defaults, and errors that name the field. */
import { z } from 'zod';
import { ValidationError } from '../../errors.js';

/** RFC 1035 resource names (instances, networks, tags, image families), as Compute Engine requires. */
const RESOURCE_NAME = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const ZONE = /^[a-z]+-[a-z]+[0-9]+-[a-z]$/;
const PROJECT = /^([a-z][-a-z0-9.]{0,62}:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$/;
const IMAGE = /^projects\/([^/]+)\/global\/images\/(family\/)?([a-z]([-a-z0-9]{0,61}[a-z0-9])?)$/;
const NETWORK = /^(projects\/[^/]+\/)?global\/networks\/([a-z]([-a-z0-9]{0,61}[a-z0-9])?)$/;
const SUBNETWORK =
  /^(projects\/[^/]+\/)?regions\/([a-z]+-[a-z]+[0-9]+)\/subnetworks\/([a-z]([-a-z0-9]{0,61}[a-z0-9])?)$/;

/**
 * Public image projects whose images run cloud-init from `user-data` on Compute Engine (an
 * allow-list: Debian, RHEL-family, SUSE and COS images run Google's guest agent or nothing, and
 * ignore it, so a proxy on them would never come up). Custom images that do run cloud-init are
 * admitted by naming their project in `cloudInitImageProjects`.
 */
export const CLOUD_INIT_IMAGE_PROJECTS = ['ubuntu-os-cloud', 'ubuntu-os-pro-cloud'];

const zone = z.string().regex(ZONE, 'must be a zone name like "us-central1-a"');
const machineType = z.string().regex(RESOURCE_NAME, 'must be a machine type name like "e2-micro"');
const image = z.string().regex(IMAGE, 'must be "projects/P/global/images/family/F" or "projects/P/global/images/NAME"');

/** Why `image` cannot carry the proxy, or undefined when its project is known to run cloud-init. */
function imageRefusal(path: string, extra: readonly string[]): string | undefined {
  const project = IMAGE.exec(path)?.[1] ?? '';
  if (CLOUD_INIT_IMAGE_PROJECTS.includes(project) || extra.includes(project)) return undefined;
  return `images of project ${project} are not known to run cloud-init user-data (known: ${[...CLOUD_INIT_IMAGE_PROJECTS, ...extra].join(', ')}); use one that does, like projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64, or name a custom image's project in cloudInitImageProjects`;
}
const network = z
  .string()
  .regex(/^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$|^(projects\/[^/]+\/)?global\/networks\/[^/]+$/, 'must be a network name');
const subnetwork = z
  .string()
  .regex(
    /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$|^(projects\/[^/]+\/)?regions\/[^/]+\/subnetworks\/[^/]+$/,
    'must be a subnetwork name or "regions/R/subnetworks/S"',
  );
const tags = z.array(z.string().regex(RESOURCE_NAME, 'network tags are RFC 1035 names')).max(64);
const diskSizeGb = z.number().int().min(10).max(65536);

/**
 * What a request's `spec.placement` may name besides the provider's own `network`, `subnetwork`
 * and `tags` (an allow-list; the default adds nothing). A network or subnetwork decides which
 * internal addresses a VM sits among, and a tag which firewall rules open to it, so a request must
 * not pick them from everything in the project.
 */
const placementBoundsSchema = z.strictObject({
  /** Further networks (a name or `[projects/P/]global/networks/N`). */
  networks: z.array(network).max(50).default([]),
  /** Further subnetworks (a name in the zone's region, or `[projects/P/]regions/R/subnetworks/S`). */
  subnetworks: z.array(subnetwork).max(50).default([]),
  /** Further network tags. */
  tags: tags.default([]),
});
export type GcpPlacementBounds = z.infer<typeof placementBoundsSchema>;

/** The provider's `options` (config.providers.N.options). */
export const gcpOptionsSchema = z
  .strictObject({
    /** The project the VMs live in. */
    project: z.string().regex(PROJECT, 'must be a project id'),
    /** A service-account key file; without it, Application Default Credentials are used. */
    keyFile: z.string().min(1).optional(),
    /** Another Compute API host (a test fake); with `protocol: http` no credentials are sent. */
    apiEndpoint: z.string().min(1).optional(),
    port: z.number().int().min(1).max(65535).optional(),
    protocol: z.enum(['https', 'http']).default('https'),
    /** Placement defaults; a request's placement overrides them key by key. */
    zone,
    machineType: machineType.default('e2-micro'),
    image: image.default('projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64'),
    network: network.default('default'),
    subnetwork: subnetwork.optional(),
    /** Network tags: the firewall rule that opens the proxy port targets them. */
    tags: tags.default(['egress-proxy']),
    /** What placements may name besides `network`, `subnetwork` and `tags` above; nothing unless listed. */
    placement: placementBoundsSchema.default({ networks: [], subnetworks: [], tags: [] }),
    /**
     * Which address of a VM the check and requests functions probe: `internal` (its `networkIP`,
     * over the Serverless VPC Access connector of infra/terraform/network.tf) or `external` (its
     * `natIP`, for functions whose egress reaches it some other way). Clients always get `natIP`.
     */
    probeVia: z.enum(['internal', 'external']).default('internal'),
    spot: z.boolean().default(false),
    diskSizeGb: diskSizeGb.default(10),
    /** The proxy port when a request says `port: 0`. */
    proxyPort: z.number().int().min(1).max(65535).default(3128),
    /** How long `create` and `delete` wait on their zone operation before returning. */
    operationWaitSeconds: z.number().positive().max(600).default(20),
    /** Deadline of one Compute API call. */
    callTimeoutSeconds: z.number().positive().max(600).default(30),
    /**
     * How long a RUNNING VM may go (since it last started) without setting its readiness guest
     * attribute before it is Failed: cloud-init did not bring the proxy up.
     */
    readySeconds: z.number().int().min(60).max(3600).default(900),
    /** Image projects besides the public Ubuntu ones whose images run cloud-init (custom images). */
    cloudInitImageProjects: z.array(z.string().regex(/^[a-z][-a-z0-9.:]{4,62}$/, 'must be a project id')).default([]),
  })
  .refine((o) => !(o.keyFile && o.protocol === 'http'), {
    message: 'a key file is never used over plain http (its tokens would travel in clear)',
    path: ['keyFile'],
  })
  .superRefine((o, ctx) => {
    const refusal = imageRefusal(o.image, o.cloudInitImageProjects);
    if (refusal) ctx.addIssue({ code: 'custom', path: ['image'], message: refusal });
  });
export type GcpOptions = z.infer<typeof gcpOptionsSchema>;

/** What a request may say in `spec.placement` for a gcp provider. */
const placementSchema = z.strictObject({
  zone: zone.optional(),
  machineType: machineType.optional(),
  image: image.optional(),
  network: network.optional(),
  subnetwork: subnetwork.optional(),
  tags: tags.optional(),
  spot: z.boolean().optional(),
  diskSizeGb: diskSizeGb.optional(),
});
export const PLACEMENT_KEYS = placementSchema.keyof().options;

/** A placement with every default applied: what the spec hash covers and `create` uses. */
export type GcpPlacement = {
  zone: string;
  machineType: string;
  image: string;
  network: string;
  subnetwork?: string | undefined;
  tags: string[];
  spot: boolean;
  diskSizeGb: number;
};

function firstIssue(error: z.ZodError, prefix: string): ValidationError {
  const issue = error.issues[0];
  if (issue?.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    return new ValidationError(`${prefix}.${key}`, `unknown key for a gcp provider (known: ${knownKeys(prefix)})`);
  }
  const path = [prefix, ...(issue?.path ?? []).map(String)].join('.');
  return new ValidationError(path, issue?.message ?? 'invalid');
}

function knownKeys(prefix: string): string {
  return prefix.startsWith('spec.') ? PLACEMENT_KEYS.join(', ') : gcpOptionsSchema.keyof().options.join(', ');
}

/**
 * Parses a provider's options.
 *
 * @param path - the provider's config path (`config.providers.2`)
 * @throws ValidationError naming `config.providers.N.options.<key>`
 */
export function parseGcpOptions(options: unknown, path: string): GcpOptions {
  const parsed = gcpOptionsSchema.safeParse(options);
  if (!parsed.success) throw firstIssue(parsed.error, `${path}.options`);
  return parsed.data;
}

/** The region of a zone (`us-central1-a` → `us-central1`). */
export function regionOf(zoneName: string): string {
  return zoneName.replace(/-[a-z]$/, '');
}

/**
 * Validates a placement and completes it with the provider's defaults, without side effects.
 *
 * @throws ValidationError naming `spec.placement.<key>`
 */
export function resolveGcpPlacement(placement: Record<string, unknown>, defaults: GcpOptions): GcpPlacement {
  const parsed = placementSchema.safeParse(placement);
  if (!parsed.success) throw firstIssue(parsed.error, 'spec.placement');
  const p = parsed.data;
  const refusal = p.image === undefined ? undefined : imageRefusal(p.image, defaults.cloudInitImageProjects);
  if (refusal) throw new ValidationError('spec.placement.image', refusal);
  checkBounds(p, defaults);
  const resolved: GcpPlacement = {
    zone: p.zone ?? defaults.zone,
    machineType: p.machineType ?? defaults.machineType,
    image: p.image ?? defaults.image,
    network: qualifyNetwork(p.network ?? defaults.network),
    tags: [...(p.tags ?? defaults.tags)].sort(),
    spot: p.spot ?? defaults.spot,
    diskSizeGb: p.diskSizeGb ?? defaults.diskSizeGb,
  };
  const sub = p.subnetwork ?? defaults.subnetwork;
  if (sub) {
    const qualified = qualifySubnetwork(sub, regionOf(resolved.zone));
    const region = SUBNETWORK.exec(qualified)?.[2];
    if (region !== regionOf(resolved.zone)) {
      const field = p.subnetwork ? 'spec.placement.subnetwork' : 'spec.placement.zone';
      throw new ValidationError(field, `subnetwork ${qualified} is not in the region of zone ${resolved.zone}`);
    }
    resolved.subnetwork = qualified;
  }
  if (p.subnetwork !== undefined) {
    const region = regionOf(resolved.zone);
    const own = (name: string) => ownProjectForm(qualifySubnetwork(name, region), defaults.project);
    const allowed = [...(defaults.subnetwork ? [defaults.subnetwork] : []), ...defaults.placement.subnetworks];
    if (!allowed.map(own).includes(own(p.subnetwork)))
      throw new ValidationError(
        'spec.placement.subnetwork',
        `${p.subnetwork} is neither the provider's subnetwork nor in its options.placement.subnetworks (allowed: ${listed(allowed)})`,
      );
  }
  return resolved;
}

/** Refuses a network or tag the provider's options neither set nor list in `placement`. */
function checkBounds(p: z.infer<typeof placementSchema>, o: GcpOptions): void {
  const own = (name: string) => ownProjectForm(qualifyNetwork(name), o.project);
  const networks = [o.network, ...o.placement.networks];
  if (p.network !== undefined && !networks.map(own).includes(own(p.network)))
    throw new ValidationError(
      'spec.placement.network',
      `${p.network} is neither the provider's network nor in its options.placement.networks (allowed: ${listed(networks)})`,
    );
  const tagsAllowed = [...o.tags, ...o.placement.tags];
  const tag = p.tags?.find((t) => !tagsAllowed.includes(t));
  if (tag !== undefined)
    throw new ValidationError(
      'spec.placement.tags',
      `tag ${tag} is neither one of the provider's tags nor in its options.placement.tags (allowed: ${listed(tagsAllowed)}): a tag decides which firewall rules open to the VM`,
    );
}

function listed(items: string[]): string {
  return items.length > 0 ? items.join(', ') : 'none';
}

/** `projects/<own project>/global/networks/n` and `global/networks/n` are one network. */
function ownProjectForm(path: string, project: string): string {
  return path.startsWith(`projects/${project}/`) ? path.slice(`projects/${project}/`.length) : path;
}

function qualifySubnetwork(name: string, region: string): string {
  return name.includes('/') ? name : `regions/${region}/subnetworks/${name}`;
}

function qualifyNetwork(name: string): string {
  return NETWORK.test(name) ? name : `global/networks/${name}`;
}

/** `projects/P/global/images/family/F` → `{ project, family }`; an image by name → `{ project, name }`. */
export function parseImage(path: string): { project: string; family?: string; name?: string } {
  const m = IMAGE.exec(path);
  if (!m?.[1] || !m[3]) return { project: '' };
  return m[2] ? { project: m[1], family: m[3] } : { project: m[1], name: m[3] };
}
