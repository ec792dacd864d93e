/** The fake's instance and operation records, and Compute's base URL and timestamp format. */
import type { GuestProcess } from './guest.js';
import type { InsertBody } from './insert-body.js';
import type { ResolvedNic } from './networks.js';

export const BASE = 'https://www.googleapis.com/compute/v1';

/** How long each transition takes (milliseconds). */
export interface Timing {
  provisioningMs: number;
  stagingMs: number;
  stoppingMs: number;
  deletingMs: number;
}

export interface Vm {
  project: string;
  zone: string;
  name: string;
  id: string;
  status: string;
  createdAt: number;
  /** The instance body as inserted (labels, metadata, disks, network interfaces, …). */
  body: InsertBody;
  /** The interface's network and subnetwork (full paths), as the insert resolved them. */
  nic: ResolvedNic;
  natIP: string;
  networkIP: string;
  /** The operation now acting on it (insert or delete): another one is refused (resourceNotReady). */
  busy?: string | undefined;
  guest?: GuestProcess | undefined;
  /** Why the guest proxy did not start (a user-data the guest could not use). */
  guestError?: string | undefined;
  /** Guest attributes the guest has set (`namespace/key` → value). */
  attributes: Map<string, string>;
  /** When the guest last booted (`lastStartTimestamp`), and how many boots it has had. */
  startedAt: number;
  boots: number;
  /** Guest-attribute PUTs the guest made (each attempt, lost or not). */
  puts: number;
}

export interface Op {
  project: string;
  zone: string;
  name: string;
  id: string;
  type: 'insert' | 'delete';
  target: string;
  targetId: string;
  status: 'PENDING' | 'RUNNING' | 'DONE';
  insertTime: number;
  endTime?: number | undefined;
  requestId?: string | undefined;
  error?: { code: string; message: string; location?: string | undefined } | undefined;
  waiters: Set<() => void>;
}

/** RFC 3339 with a UTC offset, as Compute writes timestamps (`2025-07-01T10:00:00.000-07:00`). */
export function timestamp(ms: number): string {
  return new Date(ms - 7 * 3600_000).toISOString().replace('Z', '-07:00');
}
