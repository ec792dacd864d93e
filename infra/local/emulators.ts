/** Starts the real Firestore and Pub/Sub emulators as our own process groups, and stops them. */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createConnection, createServer, type AddressInfo } from 'node:net';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { launch, logTail, stopAll, type Child } from './process-group.js';

const execFileAsync = promisify(execFile);
const FALLBACK_SDK_ROOT = '/usr/lib/google-cloud-sdk';
const POLL_MS = 100;
const FIRESTORE_JAR = 'platform/cloud-firestore-emulator/cloud-firestore-emulator.jar';
const FIRESTORE_MAIN = 'com.google.cloud.datastore.emulator.firestore.CloudFirestore';
const PUBSUB_LAUNCHER = 'platform/pubsub-emulator/bin/cloud-pubsub-emulator';

/**
 * JVM flags of both emulators: the C1 compiler only, without C2's recompilation. Their runs last
 * minutes on small machines, where C2 compiling beside the work costs more than it gives back.
 * Measured on 2 cores (Firestore emulator, writes over REST, 8 at a time): 4,000 writes in 6.9 s
 * and 11.0 CPU-s instead of 15.8 s and 28.6 CPU-s; 20,000 in 23.7 s instead of 35.8 s; ready after
 * 1.5 CPU-s instead of 2.3.
 */
const JVM_FLAGS = ['-XX:TieredStopAtLevel=1'];
const GCLOUD_SDK_ROOT = ['info', '--format=value(installation.sdk_root)'];

/** Where and how to start the emulators. */
export interface EmulatorOptions {
  /** Interface both emulators bind to, e.g. `127.0.0.1`. */
  host: string;
  firestorePort: number;
  pubsubPort: number;
  /** Directory for `firestore.log` and `pubsub.log` (created if missing, files truncated). */
  logDir: string;
  /** Google Cloud SDK root; found with `gcloud info` (then /usr/lib/google-cloud-sdk) if omitted. */
  sdkRoot?: string;
  /** How long each emulator may take to become ready (default 60 s). */
  readyTimeoutMs?: number;
  /** The Firestore emulator's Java heap in MiB (default 512; it keeps every document in memory). */
  firestoreHeapMb?: number;
}

/** Running emulators: `HOST:PORT` strings for the `*_EMULATOR_HOST` variables, and `stop()`. */
export interface RunningEmulators {
  firestoreHost: string;
  pubsubHost: string;
  /** Stops both process groups: SIGTERM, SIGKILL after a grace period; resolves once all are gone. */
  stop(): Promise<void>;
}

interface LaunchSpec {
  name: string;
  log: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  ready: () => Promise<boolean>;
}

/**
 * Starts both emulators in parallel and waits until each answers: Firestore `GET /` returns `Ok`,
 * Pub/Sub accepts a TCP connection. If either fails, whatever was started is stopped first.
 *
 * @param options - host, ports and log directory
 * @returns the `HOST:PORT` of each emulator and a `stop()` that leaves no process behind
 * @throws Error naming the missing component (Java, SDK, emulator), or with the emulator log's tail
 * @example
 * const emu = await startEmulators({ host: '127.0.0.1', firestorePort: 8080, pubsubPort: 8085, logDir: '.egress/logs' });
 * process.env['FIRESTORE_EMULATOR_HOST'] = emu.firestoreHost;
 */
export async function startEmulators(options: EmulatorOptions): Promise<RunningEmulators> {
  const { host, firestorePort, pubsubPort, logDir } = options;
  const timeoutMs = options.readyTimeoutMs ?? 60_000;
  const sdkRoot = options.sdkRoot ?? (await findSdkRoot());
  const java = findJava();
  const firestoreJar = join(sdkRoot, FIRESTORE_JAR);
  const pubsubLauncher = join(sdkRoot, PUBSUB_LAUNCHER);
  requireComponent(firestoreJar, 'cloud-firestore-emulator', sdkRoot);
  requireComponent(pubsubLauncher, 'pubsub-emulator', sdkRoot);
  for (const port of [firestorePort, pubsubPort]) {
    // A stale emulator on the port would answer our readiness checks in place of the new one.
    if (await tcpOpen(host, port)) {
      throw new Error(`port ${host}:${port} is already in use (an emulator left running?)`);
    }
  }
  mkdirSync(logDir, { recursive: true });

  const bind = (port: number) => [`--host=${host}`, `--port=${port}`];
  const heap = `-Xmx${options.firestoreHeapMb ?? 512}m`;
  const javaArgs = ['-Duser.language=en', heap, ...JVM_FLAGS, '-cp', firestoreJar, FIRESTORE_MAIN, 'start'];
  // The Pub/Sub emulator's launcher script passes this variable on to its JVM.
  const pubsubOpts = [process.env['CLOUD_PUBSUB_EMULATOR_OPTS'], ...JVM_FLAGS].filter(Boolean).join(' ');
  const specs: LaunchSpec[] = [
    {
      name: 'Firestore emulator',
      log: 'firestore.log',
      command: java,
      args: [...javaArgs, ...bind(firestorePort)],
      ready: () => firestoreAnswers(host, firestorePort),
    },
    {
      name: 'Pub/Sub emulator',
      log: 'pubsub.log',
      command: pubsubLauncher,
      args: bind(pubsubPort),
      env: { ...process.env, CLOUD_PUBSUB_EMULATOR_OPTS: pubsubOpts },
      ready: () => tcpOpen(host, pubsubPort),
    },
  ];
  const children: Child[] = [];
  const results = await Promise.allSettled(
    specs.map(async (spec) => {
      const child = launch(spec.name, spec.command, spec.args, join(logDir, spec.log), spec.env);
      children.push(child);
      await waitReady(child, spec.ready, timeoutMs);
    }),
  );
  const stop = () => stopAll(children);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  return { firestoreHost: `${host}:${firestorePort}`, pubsubHost: `${host}:${pubsubPort}`, stop };
}

/**
 * Deletes every document of one project in the Firestore emulator.
 *
 * @param host - the emulator's `HOST:PORT`
 * @param project - project id whose documents are removed
 */
export async function clearFirestore(host: string, project: string): Promise<void> {
  const url = `http://${host}/emulator/v1/projects/${encodeURIComponent(project)}/databases/(default)/documents`;
  const res = await fetch(url, { method: 'DELETE', signal: AbortSignal.timeout(10_000) });
  if (!res.ok) {
    throw new Error(`clearing Firestore ${project} failed: HTTP ${res.status} ${await res.text()}`);
  }
}

/**
 * A TCP port that was free a moment ago (the OS picks it; another process may still take it).
 *
 * @param host - interface to probe (default `127.0.0.1`)
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  const address: AddressInfo | string | null = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no TCP port assigned');
  return address.port;
}

async function findSdkRoot(): Promise<string> {
  try {
    const { stdout } = await execFileAsync('gcloud', GCLOUD_SDK_ROOT, { timeout: 30_000 });
    const root = stdout.trim();
    if (root && existsSync(root)) return root;
  } catch {
    // No gcloud on PATH (or it failed): try the Debian package's location below.
  }
  if (existsSync(FALLBACK_SDK_ROOT)) return FALLBACK_SDK_ROOT;
  throw new Error(
    `Google Cloud SDK not found: \`gcloud info\` gave no SDK root and ${FALLBACK_SDK_ROOT} does not exist. ` +
      'Install google-cloud-cli with the cloud-firestore-emulator and pubsub-emulator components.',
  );
}

function requireComponent(path: string, component: string, sdkRoot: string): void {
  if (existsSync(path)) return;
  throw new Error(
    `${path} is missing: the Google Cloud SDK at ${sdkRoot} lacks the "${component}" component ` +
      `(gcloud components install ${component}, or apt-get install google-cloud-cli-${component.replace('cloud-', '')}).`,
  );
}

function findJava(): string {
  const home = process.env['JAVA_HOME'];
  const dirs = [...(home ? [join(home, 'bin')] : []), ...(process.env['PATH'] ?? '').split(delimiter)];
  const java = dirs
    .filter(Boolean)
    .map((dir) => join(dir, 'java'))
    .find((path) => existsSync(path));
  if (java) return java;
  throw new Error('Java not found (JAVA_HOME, PATH): the Firestore and Pub/Sub emulators need Java 17+.');
}

async function waitReady(child: Child, ready: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (child.exit) {
      throw new Error(`${child.name} exited (${child.exit}) before it was ready${logTail(child)}`);
    }
    if (await ready()) return;
    await sleep(POLL_MS);
  }
  throw new Error(`${child.name} not ready after ${ms} ms${logTail(child)}`);
}

async function firestoreAnswers(host: string, port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://${host}:${port}/`, { signal: AbortSignal.timeout(1_000) });
    return res.ok && (await res.text()).trim() === 'Ok';
  } catch {
    return false;
  }
}

function tcpOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
