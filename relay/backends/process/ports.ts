/** Port allocation for the process backend: inside the configured range, never handed out twice. */
import net from 'node:net';
import { PermanentError, QuotaExceededError } from '../../../shared/errors.js';
import { KeyedSerializer } from '../../keyed-serializer.js';

/**
 * Ports of `portRange` one instance takes: its proxy's and its TLS listener's. A range of N ports
 * holds N / 2 instances.
 */
export const PORTS_PER_INSTANCE = 2;

/** True when nothing listens on `host:port` right now (we bind it briefly and let go). */
export function canBind(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** What a reservation has to respect. */
export interface ReserveRequest {
  /** Where the process will listen. */
  host: string;
  /** `spec.port`: a fixed port (non-zero) or `0` for any. */
  requested: number;
  /** Tried first when `requested` is 0: the port a restarted instance had before. */
  preferred?: number | undefined;
  /** Ports to skip in this attempt (found taken by a foreign program at start). */
  exclude?: ReadonlySet<number>;
  /** Ports recorded by our other instances (port → instance name), read under the allocation lock. */
  taken: () => Promise<Map<number, string>>;
}

/**
 * Hands out ports one reservation at a time, so two concurrent creates never get the same port.
 * A reservation lasts until {@link PortAllocator.release}; by then the instance's state file
 * records the port and `taken` reports it.
 */
export class PortAllocator {
  private readonly reserved = new Set<number>();
  private readonly serial = new KeyedSerializer();

  constructor(private readonly range: readonly [number, number]) {}

  /**
   * @returns a reserved port
   * @throws PermanentError naming `spec.port` (outside the range, or already in use);
   *   QuotaExceededError when no port in the range is free
   */
  reserve(req: ReserveRequest): Promise<number> {
    const [lo, hi] = this.range;
    if (req.requested !== 0 && (req.requested < lo || req.requested > hi)) {
      return Promise.reject(
        new PermanentError(`port ${req.requested} is outside this provider's range ${lo}-${hi}`, 'spec.port'),
      );
    }
    return this.serial.run('ports', async () => {
      const taken = await req.taken();
      if (req.requested !== 0) {
        const owner = taken.get(req.requested);
        if (owner !== undefined || this.reserved.has(req.requested)) {
          throw new PermanentError(
            `port ${req.requested} is already used by instance ${owner ?? '(being created)'}`,
            'spec.port',
          );
        }
        if (!(await canBind(req.host, req.requested))) {
          throw new PermanentError(`port ${req.requested} is in use by another program on ${req.host}`, 'spec.port');
        }
        this.reserved.add(req.requested);
        return req.requested;
      }
      const candidates = [req.preferred, ...Array.from({ length: hi - lo + 1 }, (_, i) => lo + i)];
      for (const port of candidates) {
        if (port === undefined || port < lo || port > hi) continue;
        if (taken.has(port) || this.reserved.has(port) || req.exclude?.has(port)) continue;
        if (!(await canBind(req.host, port))) continue;
        this.reserved.add(port);
        return port;
      }
      throw new QuotaExceededError(
        `no free port in ${lo}-${hi} on ${req.host} (each instance takes ${PORTS_PER_INSTANCE}: its proxy's and its TLS listener's)`,
      );
    });
  }

  /** Ends a reservation (the state file now records the port, or the create failed). */
  release(port: number): void {
    this.reserved.delete(port);
  }
}
