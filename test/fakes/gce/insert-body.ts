/** The part of an `instances.insert` body the fake reads, shared by its world and its renderer. */
import { z } from 'zod';

/** The part of an `instances.insert` body the fake reads (the rest is kept as sent). */
export const insertBodySchema = z
  .object({
    name: z.string(),
    machineType: z.string().optional(),
    labels: z.record(z.string(), z.string()).optional(),
    metadata: z
      .object({ items: z.array(z.object({ key: z.string(), value: z.string().optional() })).optional() })
      .optional(),
    disks: z
      .array(
        z
          .object({
            boot: z.boolean().optional(),
            initializeParams: z.object({ sourceImage: z.string().optional() }).loose().optional(),
          })
          .loose(),
      )
      .optional(),
    networkInterfaces: z
      .array(z.object({ network: z.string().optional(), subnetwork: z.string().optional() }).loose())
      .optional(),
    tags: z.object({ items: z.array(z.string()).optional() }).optional(),
    scheduling: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();
export type InsertBody = z.infer<typeof insertBodySchema>;
