/**
 * The forwarder of a process backend whose proxies leave from loopback addresses (`egressAddresses`
 * in 127.0.0.0/8). A socket bound to 127.x reaches only this host, so each proxy hands what is not
 * for this host to its backend's forwarder (tinyproxy `Upstream`): one tinyproxy without auth and
 * without `Bind`, listening on the range's first address, which connects from the host's own
 * address. Loopback targets (the echo endpoint) are still reached directly from the proxy's own
 * address. Like the proxies it is a detached process that outlives the relay and is adopted again.
 */
import { readFile, rm } from 'node:fs/promises';
import { z } from 'zod';
import { RetryableError } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';
import { writeFileAtomic } from '../../atomic-file.js';
import { KeyedSerializer } from '../../keyed-serializer.js';
import { awaitExit, findByMarkers, isOurs, terminate } from './processes.js';
import { forwarderMarkers } from './proxy-config.js';
import type { StateStore } from './state.js';
import type { EgressPolicy } from '../../../shared/config/egress-policy.js';
import type { RunAs } from './fence.js';
import { forwarderConfig, PortInUseError, spawnTinyproxy, type HostPort } from './tinyproxy.js';

const recordSchema = z.object({ pid: z.number().int().positive() });

/** How a backend's forwarder is run. */
export interface ForwarderOptions {
  provider: string;
  /** Where it listens: the egress range's first address and the port range's first port. */
  listen: HostPort;
  tinyproxyPath: string;
  /** How long it may take to listen. */
  timeoutMs: number;
  /** Its provider's egress policy (it carries its proxies' traffic). */
  egress: EgressPolicy;
  /** The user it runs as, fenced like the proxies; absent: the relay's own. */
  runAs?: RunAs | undefined;
  logger: Logger;
}

/** One backend's forwarder: started on demand, healed when found dead, never two at once. */
export class Forwarder {
  private readonly serial = new KeyedSerializer();

  constructor(private readonly opts: ForwarderOptions) {}

  /** What each proxy's `Upstream http` names. */
  get address(): HostPort {
    return this.opts.listen;
  }

  /**
   * Makes sure the forwarder runs: the recorded process while it is ours (also after a relay
   * restart), otherwise a new one, after stopping any unrecorded one of ours. Idempotent; calls
   * run one at a time.
   *
   * @returns its pid
   * @throws RetryableError when it cannot start (naming its address when that is taken)
   */
  ensure(store: StateStore): Promise<number> {
    return this.serial.run('forwarder', async () => {
      const { provider, listen } = this.opts;
      const paths = store.forwarderPaths(provider);
      const markers = forwarderMarkers(provider, store.root);
      const recorded = await readPid(paths.record);
      if (recorded !== undefined && (await isOurs(recorded, markers))) return recorded;
      // A forwarder whose record was lost still holds the address.
      for (const pid of await findByMarkers(markers)) await terminate(pid, markers);
      if (recorded !== undefined) await awaitExit(recorded, markers);
      try {
        const pid = await spawnTinyproxy(
          {
            program: this.opts.tinyproxyPath,
            markers,
            config: forwarderConfig(listen, this.opts.egress),
            runAs: this.opts.runAs,
            listen,
            configPath: paths.conf,
            logPath: paths.log,
            timeoutMs: this.opts.timeoutMs,
          },
          (pid) => writeFileAtomic(paths.record, `${JSON.stringify({ pid })}\n`),
        );
        const fields = { pid, host: listen.host, port: listen.port };
        if (recorded === undefined) this.opts.logger.info('started forwarder', fields);
        else this.opts.logger.warn('forwarder was not running: started it again', { ...fields, was: recorded });
        return pid;
      } catch (err) {
        await rm(paths.record, { force: true });
        if (err instanceof PortInUseError)
          throw new RetryableError(`forwarder cannot listen on ${listen.host}:${listen.port}: it is in use`, 5000, {
            cause: err,
          });
        throw err;
      }
    });
  }
}

/** The pid a forwarder record holds; none when it is missing or unreadable. */
async function readPid(file: string): Promise<number | undefined> {
  try {
    const parsed = recordSchema.safeParse(JSON.parse(await readFile(file, 'utf8')));
    return parsed.success ? parsed.data.pid : undefined;
  } catch {
    return undefined;
  }
}
