/**
 * A proxy's phases, in lifecycle order. Apart from status.ts, whose schemas are zod, so that the
 * dashboard's browser bundle (shared/api/dashboard/) takes the list without zod.
 */
export const PHASES = ['Pending', 'Provisioning', 'Ready', 'Unhealthy', 'Replacing', 'Deleting', 'Failed'] as const;
export type Phase = (typeof PHASES)[number];
