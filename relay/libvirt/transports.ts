/** Opens the byte stream to a daemon: unix socket, TCP, TLS, or `ssh HOST virt-ssh-helper URI` over stdio. */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { isIP, connect as netConnect, type Socket } from 'node:net';
import { join } from 'node:path';
import { Duplex } from 'node:stream';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { LibvirtConnectionLostError } from './errors.js';
import type { LibvirtUri } from './uri.js';

/** TLS client credentials; the defaults follow libvirt (`?pkipath=DIR` or /etc/pki). */
export interface TlsOptions {
  /** CA certificate that signed the daemon's certificate; default `cacert.pem` in pkipath or /etc/pki/CA/cacert.pem. */
  caFile?: string;
  /** Client certificate; default `clientcert.pem` in pkipath or /etc/pki/libvirt/clientcert.pem. */
  certFile?: string;
  /** Client key; default `clientkey.pem` in pkipath or /etc/pki/libvirt/private/clientkey.pem. */
  keyFile?: string;
}

/** How the ssh transport runs ssh. */
export interface SshOptions {
  /** The ssh binary; default the URI's `command` parameter, else `ssh` from PATH. */
  command?: string;
  /** Extra ssh options placed before the host, e.g. `['-o', 'ConnectTimeout=5']`. */
  extraArgs?: string[];
}

/** Settings a transport needs beyond the URI. */
export interface TransportOptions {
  tls?: TlsOptions;
  ssh?: SshOptions;
  /** Aborting gives up the dial: the socket is destroyed (or ssh killed) and the promise rejects with the reason. */
  signal?: AbortSignal;
}

const endReasons = new WeakMap<Duplex, string>();

/** Why a transport's readable side ended, when it knows more than "closed" (e.g. ssh's exit status and stderr). */
export function endReason(stream: Duplex): string | undefined {
  return endReasons.get(stream);
}

/** Quotes one word for the remote shell ssh hands the command to. */
const shellQuote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`;

/** The ssh argument list: batch mode (never prompt), no tty, no escape character, then `virt-ssh-helper NAME`. */
export function sshArgs(uri: LibvirtUri, options: SshOptions = {}): string[] {
  const args = ['-T', '-e', 'none', '-o', 'BatchMode=yes'];
  if (uri.port !== undefined) args.push('-p', String(uri.port));
  if (uri.user !== undefined) args.push('-l', uri.user);
  if (uri.params['keyfile']) args.push('-i', uri.params['keyfile']);
  if (uri.params['known_hosts']) args.push('-o', `UserKnownHostsFile=${uri.params['known_hosts']}`);
  args.push(...(options.extraArgs ?? []), '--', uri.host, `virt-ssh-helper ${shellQuote(uri.remoteName)}`);
  return args;
}

function openSsh(uri: LibvirtUri, options: SshOptions = {}, signal?: AbortSignal): Promise<Duplex> {
  const command = options.command ?? uri.params['command'] ?? 'ssh';
  // ssh itself connects and authenticates after spawn; the dial's deadline then covers the first call.
  const child = spawn(command, sshArgs(uri, options), { stdio: ['pipe', 'pipe', 'pipe'], signal });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text: string) => {
    stderr = (stderr + text).slice(-2000);
  });
  const stream = new Duplex({
    read: () => void child.stdout.resume(),
    // Write errors (EPIPE once ssh died) are not reported here: 'close' below reports ssh's own reason.
    write: (chunk: Buffer, _encoding, done) => void child.stdin.write(chunk, () => done()),
    final: (done) => void child.stdin.end(() => done()),
    destroy: (error, done) => {
      if (child.exitCode === null && child.signalCode === null) child.kill();
      done(error);
    },
  });
  child.stdout.on('data', (chunk: Buffer) => {
    if (!stream.push(chunk)) child.stdout.pause();
  });
  child.stdin.on('error', () => {});
  // 'close' comes after the exit and all output: the reason carries ssh's own message, and ending
  // (rather than destroying) the stream lets the reader take the data still buffered first.
  child.on('close', (code, exitSignal) => {
    const detail = stderr.trim() ? `: ${stderr.trim()}` : '';
    endReasons.set(stream, `${command} exited (${exitSignal ?? `code ${code}`})${detail}`);
    stream.push(null);
  });
  return new Promise((resolve, reject) => {
    child.once('error', (error) =>
      reject(
        signal?.aborted
          ? (signal.reason as Error)
          : new LibvirtConnectionLostError(`cannot run ${command}: ${error.message}`),
      ),
    );
    child.once('spawn', () => resolve(stream));
  });
}

/** Resolves with the socket once `event` fires, or rejects on its first error. */
function whenConnected<T extends Socket>(socket: T, event: string, what: string, signal?: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const settle = (error?: Error): void => {
      socket.off('error', onError);
      signal?.removeEventListener('abort', onAbort);
      if (!error) return resolve(socket);
      socket.destroy();
      reject(error);
    };
    const onError = (error: Error): void =>
      settle(new LibvirtConnectionLostError(`cannot connect to ${what}: ${error.message}`, { cause: error }));
    const onAbort = (): void => settle(signal?.reason as Error);
    if (signal?.aborted) return onAbort();
    socket.once('error', onError);
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.once(event, () => settle());
  });
}

/** libvirt's daemon sends one byte after the TLS handshake: 1 when it accepted our certificate and address. */
function readTlsCheckByte(socket: TLSSocket, what: string, signal?: AbortSignal): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const settle = (error?: Error): void => {
      socket.off('readable', onReadable);
      socket.off('end', onEnd);
      signal?.removeEventListener('abort', onAbort);
      if (!error) return resolve(socket);
      socket.destroy();
      reject(error);
    };
    const onReadable = (): void => {
      const byte = socket.read(1) as Buffer | null;
      if (byte === null) return;
      if (byte[0] === 1) settle();
      else settle(new LibvirtConnectionLostError(`TLS to ${what}: the daemon rejected our certificate or address`));
    };
    const onEnd = (): void =>
      settle(new LibvirtConnectionLostError(`TLS to ${what}: the daemon closed the connection after the handshake`));
    const onAbort = (): void => settle(signal?.reason as Error);
    socket.on('readable', onReadable);
    socket.once('end', onEnd);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

async function openTls(uri: LibvirtUri, options: TlsOptions = {}, signal?: AbortSignal): Promise<Duplex> {
  const dir = uri.params['pkipath'];
  const [ca, cert, key] = await Promise.all([
    readFile(options.caFile ?? (dir ? join(dir, 'cacert.pem') : '/etc/pki/CA/cacert.pem')),
    readFile(options.certFile ?? (dir ? join(dir, 'clientcert.pem') : '/etc/pki/libvirt/clientcert.pem')),
    readFile(options.keyFile ?? (dir ? join(dir, 'clientkey.pem') : '/etc/pki/libvirt/private/clientkey.pem')),
  ]).catch((error: Error) => {
    throw new LibvirtConnectionLostError(`TLS credentials for ${uri.uri}: ${error.message}`, { cause: error });
  });
  const what = `${uri.host}:${uri.port}`;
  const socket = tlsConnect({
    host: uri.host,
    port: uri.port,
    ca,
    cert,
    key,
    // SNI takes names only; an IP address is still checked against the certificate's IP SANs.
    ...(isIP(uri.host) ? {} : { servername: uri.host }),
    rejectUnauthorized: uri.params['no_verify'] !== '1',
  });
  return readTlsCheckByte(await whenConnected(socket, 'secureConnect', what, signal), what, signal);
}

/**
 * Opens the transport `uri` names. Callers destroy the returned stream to end it.
 * @throws LibvirtConnectionLostError when the daemon cannot be reached
 */
export async function openTransport(uri: LibvirtUri, options: TransportOptions = {}): Promise<Duplex> {
  switch (uri.transport) {
    case 'unix': {
      const path = uri.socketPath ?? '';
      return whenConnected(netConnect({ path }), 'connect', path, options.signal);
    }
    case 'tcp': {
      const what = `${uri.host}:${uri.port}`;
      return whenConnected(netConnect({ host: uri.host, port: Number(uri.port) }), 'connect', what, options.signal);
    }
    case 'tls':
      return openTls(uri, options.tls, options.signal);
    case 'ssh':
      return openSsh(uri, options.ssh, options.signal);
  }
}
