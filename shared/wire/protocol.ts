/** Messages between the functions and a relay: commands out on `relay-commands`, reports back on `relay-reports`. */
import { z } from 'zod';
import { dnsLabel } from '../domain/names.js';
import { errorInfoSchema } from '../errors.js';
import { credentialsSchema, instanceSchema, instanceSpecSchema } from '../providers/contract.js';
import { sealedCredentialsSchema } from './sealed-credentials.js';

/** One instance in a relay's inventory: the provider it belongs to and the last command applied. */
export const inventoryItemSchema = instanceSchema.extend({
  provider: dnsLabel,
  commandId: z.string().max(128).optional(),
});
export type InventoryItem = z.infer<typeof inventoryItemSchema>;

const commandBase = {
  commandId: z.string().min(1).max(128),
  relay: dnsLabel,
  provider: dnsLabel,
  /** Epoch ms; a relay ignores a command older than the last one it applied to the same instance. */
  issuedAt: z.number(),
};

const deleteCommandSchema = z.object({ kind: z.literal('delete'), ...commandBase, name: dnsLabel });

/** A command as the relay applies it: a create's credentials in clear (never published so: see `wireCommandSchema`). */
export const relayCommandSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('create'), ...commandBase, spec: instanceSpecSchema }),
  deleteCommandSchema,
]);
export type RelayCommand = z.infer<typeof relayCommandSchema>;

/**
 * A command as published on `relay-commands`: a create's credentials sealed for its relay
 * (sealed-credentials.ts); in clear only between peers that both run without keys, which only
 * `EGRESS_UNSIGNED_RELAYS=development` allows (command-wire.ts).
 */
export const wireCommandSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('create'),
    ...commandBase,
    spec: instanceSpecSchema.extend({ credentials: z.union([sealedCredentialsSchema, credentialsSchema]) }),
  }),
  deleteCommandSchema,
]);
export type WireCommand = z.infer<typeof wireCommandSchema>;

export const commandResultSchema = z.object({
  commandId: z.string().max(128),
  provider: dnsLabel,
  name: dnsLabel,
  kind: z.enum(['create', 'delete']),
  ok: z.boolean(),
  error: errorInfoSchema.optional(),
});
export type CommandResult = z.infer<typeof commandResultSchema>;

/** A relay's full report: heartbeat, backend health, complete inventory, results since the last one. */
export const relayReportSchema = z.object({
  relay: dnsLabel,
  /** Changes each time the relay starts; with `seq` it orders reports and drops stale ones. */
  bootId: z.string().min(1).max(64),
  seq: z.number().int().min(0),
  sentAt: z.number(),
  startedAt: z.number(),
  providers: z
    .array(z.object({ name: dnsLabel, type: z.string().max(32), ok: z.boolean(), message: z.string().max(1024) }))
    .max(64),
  instances: z.array(inventoryItemSchema).max(10_000),
  results: z.array(commandResultSchema).max(1000),
  /**
   * The W3C `traceparent` of the command last applied to an instance, by instance name, while the
   * instance is settling (until it is Running and probed ok, or gone): the relay-report function
   * kicks that proxy's checks in that trace, so one apply is one trace up to Ready.
   */
  traces: z
    .record(dnsLabel, z.string().regex(/^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/))
    .refine((t) => Object.keys(t).length <= 1000, 'at most 1000 traces')
    .optional(),
});
export type RelayReport = z.infer<typeof relayReportSchema>;
