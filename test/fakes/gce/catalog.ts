/** What the fake Compute API offers: zones, machine types and public images, as the real catalogue names them. */

/** Every zone the fake knows, by region. Any project sees all of them. */
export const ZONES: Record<string, string[]> = {
  'us-central1': ['us-central1-a', 'us-central1-b', 'us-central1-c', 'us-central1-f'],
  'us-east1': ['us-east1-b', 'us-east1-c', 'us-east1-d'],
  'europe-west1': ['europe-west1-b', 'europe-west1-c', 'europe-west1-d'],
  'europe-west4': ['europe-west4-a', 'europe-west4-b'],
  'asia-northeast1': ['asia-northeast1-a'],
};

export const ALL_ZONES = Object.values(ZONES).flat();

/** Machine types offered in every zone of the fake (a real zone offers many more). */
export const MACHINE_TYPES: Record<string, { guestCpus: number; memoryMb: number }> = {
  'e2-micro': { guestCpus: 2, memoryMb: 1024 },
  'e2-small': { guestCpus: 2, memoryMb: 2048 },
  'e2-medium': { guestCpus: 2, memoryMb: 4096 },
  'e2-standard-2': { guestCpus: 2, memoryMb: 8192 },
  'n1-standard-1': { guestCpus: 1, memoryMb: 3840 },
  'n2-standard-2': { guestCpus: 2, memoryMb: 8192 },
};

/** Public images: project → family → current image name. */
export const IMAGES: Record<string, Record<string, string>> = {
  'ubuntu-os-cloud': {
    'ubuntu-2404-lts-amd64': 'ubuntu-2404-noble-amd64-v20250701',
    'ubuntu-2204-lts': 'ubuntu-2204-jammy-v20250701',
  },
  'debian-cloud': { 'debian-12': 'debian-12-bookworm-v20250701' },
  'cos-cloud': { 'cos-stable': 'cos-stable-121-18867-90-4' },
};

/** The region of a zone, or undefined for a zone the fake does not know. */
export function regionOfZone(zone: string): string | undefined {
  return Object.entries(ZONES).find(([, zones]) => zones.includes(zone))?.[0];
}

/** Resolves `[https://…/compute/v1/]projects/P/global/images/(family/F|NAME)` to an image, or undefined. */
export function resolveImage(source: string): { project: string; name: string; family: string } | undefined {
  const m = /(?:^|\/)projects\/([^/]+)\/global\/images\/(?:family\/([^/]+)|([^/]+))$/.exec(source);
  const project = m?.[1];
  const families = project ? IMAGES[project] : undefined;
  if (!project || !families) return undefined;
  if (m[2]) {
    const name = families[m[2]];
    return name ? { project, name, family: m[2] } : undefined;
  }
  const entry = Object.entries(families).find(([, name]) => name === m[3]);
  return entry ? { project, name: entry[1], family: entry[0] } : undefined;
}
