/** The local stack's functions: every function of the topology under functions-framework, supervised. */
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Logger } from '../../shared/logger.js';
import { startChild, supervise, waitForPort, type Supervised } from './children.js';
import { httpFunctions, pushedFunctions, type Topology } from './topology.js';

export interface LocalFunctions {
  /** Function name → its port. */
  port: Map<string, number>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The functions of `topology` on consecutive ports from `firstPort` (pushed ones first, in topology
 * order, then the HTTP ones). Each is restarted when its process dies, as Cloud Run starts a new
 * instance; `start` resolves once every one listens.
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
  let running: Supervised[] = [];
  const args = (name: string) => [
    ffMain,
    `--target=${name}`,
    `--source=${join(root, 'dist', 'functions', name)}`,
    `--port=${port.get(name)}`,
    `--signature-type=${httpNames.includes(name) ? 'http' : 'cloudevent'}`,
  ];
  return {
    port,
    async start() {
      logger.info('starting the functions', { functions: names });
      running = names.map((name) =>
        supervise(
          () => startChild(`function ${name}`, args(name), env, join(logDir, `function-${name}.log`)),
          join(pidDir, `function-${name}.pid`),
          (code, signal) => logger.warn(`the function ${name} exited; starting a new instance`, { code, signal }),
        ),
      );
      await Promise.all(running.map((f, i) => waitForPort(host, firstPort + i, 30_000, f.current())));
    },
    async stop() {
      await Promise.all(running.map((f) => f.stop()));
    },
  };
}
