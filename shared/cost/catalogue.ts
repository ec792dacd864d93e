/** The dated price catalogue (`prices-2026-12.json`): its schema, and look-ups that name the field a price is missing for. */
import { z } from 'zod';
import type { VmFootprint } from '../domain/footprint.js';
import { ValidationError } from '../errors.js';
import raw from './prices-2026-12.json' with { type: 'json' };

const usd = z.number().nonnegative();
/** Every group of prices says where it was read and whether the page itself confirmed it. */
const cited = { source: z.url(), confirmed: z.boolean(), note: z.string().min(1) };

export const catalogueSchema = z.strictObject({
  about: z.string(),
  recordedOn: z.iso.date(),
  currency: z.literal('USD'),
  hoursPerMonth: z.number().positive(),
  machineTypes: z.strictObject({
    ...cited,
    hourly: z.record(z.string(), z.record(z.string(), z.strictObject({ onDemand: usd, spot: usd }))),
  }),
  externalIpv4: z.strictObject({ ...cited, hourlyStandard: usd, hourlySpot: usd }),
  disks: z.strictObject({ ...cited, gibMonth: z.record(z.string(), z.record(z.string(), usd)) }),
  internetEgress: z.strictObject({
    ...cited,
    tiers: z.array(z.strictObject({ upToGib: z.number().positive().optional(), perGib: usd })).min(1),
  }),
  firestore: z.strictObject({
    ...cited,
    readPer100k: usd,
    writePer100k: usd,
    deletePer100k: usd,
    freePerDay: z.strictObject({ reads: usd, writes: usd, deletes: usd }),
  }),
  pubsub: z.strictObject({ ...cited, perTiB: usd, freeGiB: usd }),
  cloudRun: z.strictObject({
    ...cited,
    perMillionRequests: usd,
    freeRequests: usd,
    perVcpuSecond: usd,
    freeVcpuSeconds: usd,
    perGibSecond: usd,
    freeGibSeconds: usd,
  }),
});
export type Catalogue = z.infer<typeof catalogueSchema>;

/** The catalogue in the repository, checked once at load. */
export const CATALOGUE: Catalogue = Object.freeze(catalogueSchema.parse(raw));

/**
 * The hourly price of a machine type in a region.
 *
 * @param field - the config or request field the machine type came from (named in the error)
 * @throws ValidationError naming `field` when the catalogue has no price for it
 */
export function machineHourly(
  catalogue: Catalogue,
  region: string,
  machineType: string,
  spot: boolean,
  field: { zone: string; machineType: string },
): number {
  const regional = catalogue.machineTypes.hourly[region];
  if (!regional)
    throw new ValidationError(
      field.zone,
      `no prices for region ${region} in the catalogue of ${catalogue.recordedOn} (known: ${Object.keys(catalogue.machineTypes.hourly).join(', ')})`,
    );
  const price = regional[machineType];
  if (!price)
    throw new ValidationError(
      field.machineType,
      `no price for machine type ${machineType} in ${region} in the catalogue of ${catalogue.recordedOn} (known: ${Object.keys(regional).join(', ')})`,
    );
  return spot ? price.spot : price.onDemand;
}

/**
 * The monthly price of one GiB of a disk type in a region.
 *
 * @throws ValidationError naming `field` when the catalogue has no price for it
 */
export function diskGibMonth(catalogue: Catalogue, region: string, diskType: string, field: string): number {
  const price = catalogue.disks.gibMonth[region]?.[diskType];
  if (price === undefined)
    throw new ValidationError(
      field,
      `no price for disk type ${diskType} in ${region} in the catalogue of ${catalogue.recordedOn}`,
    );
  return price;
}

/**
 * The rates one VM of `vm` is billed at: its machine an hour, each in-use external IPv4 an hour (at
 * the Spot rate for a Spot VM), and its boot disk's type per GiB-month. The monthly estimate and a
 * pool's running cost both price VMs from these.
 *
 * @throws ValidationError naming the zone or machine type field the catalogue has no price for
 */
export function vmRates(catalogue: Catalogue, vm: VmFootprint) {
  return {
    machineHourly: machineHourly(catalogue, vm.region, vm.machineType, vm.spot, vm.fields),
    ipv4Hourly: vm.spot ? catalogue.externalIpv4.hourlySpot : catalogue.externalIpv4.hourlyStandard,
    diskGibMonth: diskGibMonth(catalogue, vm.region, vm.bootDisk.type, vm.fields.zone),
  };
}

/** Internet egress of `gib` GiB in one month, through the volume tiers. */
export function egressMonthly(catalogue: Catalogue, gib: number): number {
  let cost = 0;
  let from = 0;
  for (const tier of catalogue.internetEgress.tiers) {
    const to = tier.upToGib ?? Infinity;
    cost += Math.max(0, Math.min(gib, to) - from) * tier.perGib;
    from = to;
    if (gib <= to) break;
  }
  return cost;
}
