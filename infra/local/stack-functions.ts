/** The local stack's functions: every function of the topology under functions-framework, supervised. */
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Logger } from '../../shared/logger.js';
import { startChild, supervise, waitForPort, type Supervised } from './children.js';
import { startFront, type Front } from './front.js';
import { httpFunctions, pushedFunctions, type Topology } from './topology.js';

/**
 * Instances listen this far above the fronts: a fixed port outside the kernel's ephemeral range,
 * which an outgoing connection could take while an instance restarts; within the 100 ports a stack
 * with `EGRESS_PORT_OFFSET` owns (emulators 8080/8085, echo 8088, fronts from 8090).
 */
const INSTANCE_PORT_SHIFT = 20;

export interface LocalFunctions {
  /** Function name → its port (the front's: it stays the same while instances come and go). */
  port: Map<string, number>;
  start(): Promise<void>;
  /** Stops every instance and starts new ones; requests meanwhile wait at the fronts. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The functions of `topology` on consecutive ports from `firstPort` (pushed ones first, in topology
 * order, then the HTTP ones). Each port is a front (`front.ts`) that stays up while the instance
 * behind it, a functions-framework process 20 ports above, is restarted when it dies,
 * as Cloud Run starts a new instance behind the same URL; `start` resolves once every one listens.
 */
export function localFunctions(opts: {
  root: string;
  home: string;
  host: string;
  firstPort: number;
  topology: Topology;
  env: Record<string, string>;
  logger: Logger;
}): LocalFunctions {
  const { root, home, host, firstPort, topology, env, logger } = opts;
  const httpNames = httpFunctions(topology);
  const names = [...pushedFunctions(topology), ...httpNames];
  // The framework's CLI (its `bin`) sits beside its main module.
  const ffMain = join(dirname(createRequire(import.meta.url).resolve('@google-cloud/functions-framework')), 'main.js');
  const port = new Map(names.map((name, i) => [name, firstPort + i]));
  const logDir = join(home, 'logs');
  const pidDir = join(home, 'pids');
  mkdirSync(pidDir, { recursive: true });
  const instancePort = (name: string) => (port.get(name) ?? 0) + INSTANCE_PORT_SHIFT;
  let fronts: Front[] = [];
  let running: Supervised[] = [];
  const args = (name: string) => [
    ffMain,
    `--target=${name}`,
    `--source=${join(root, 'dist', 'functions', name)}`,
    `--port=${instancePort(name)}`,
    `--signature-type=${httpNames.includes(name) ? 'http' : 'cloudevent'}`,
  ];
  const startInstances = async () => {
    const started = names.map((name) => ({
      name,
      instance: supervise(
        () => startChild(`function ${name}`, args(name), env, join(logDir, `function-${name}.log`)),
        join(pidDir, `function-${name}.pid`),
        (code, signal) => logger.warn(`the function ${name} exited; starting a new instance`, { code, signal }),
      ),
    }));
    running = started.map((s) => s.instance);
    await Promise.all(
      started.map(({ name, instance }) => waitForPort(host, instancePort(name), 30_000, instance.current())),
    );
  };
  const stopInstances = async () => {
    await Promise.all(running.map((f) => f.stop()));
    running = [];
  };
  return {
    port,
    async start() {
      logger.info('starting the functions', { functions: names });
      await startInstances();
      for (const name of names)
        fronts.push(
          await startFront({
            host,
            port: port.get(name) ?? 0,
            instancePort: instancePort(name),
            timeoutMs: (topology.functions[name]?.timeoutSeconds ?? 300) * 1000,
          }),
        );
    },
    async restart() {
      await stopInstances();
      await startInstances();
    },
    async stop() {
      await stopInstances();
      await Promise.all(fronts.map((f) => f.close()));
      fronts = [];
    },
  };
}
