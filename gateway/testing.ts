/** Test and bench helpers: an in-memory twin of the fleet API, and real `proxy` servers standing in for fleet proxies. */
import { execFile, spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { createConnection, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createProxy } from 'proxy';
import { X509Certificate } from 'node:crypto';
import { certificateArgs, stunnelConfig } from '../shared/providers/stunnel.js';
import { fingerprintOf } from '../shared/tls/pinned.js';
import type { FleetApi, FleetFilters, ProxyReport } from './fleet-api.js';
import type { Upstream } from './selection.js';

/** curl with `args` (10 s at most): the body and the status code. */
export async function curl(args: string[]): Promise<{ status: number; body: string }> {
  const { stdout } = await promisify(execFile)('curl', ['-sS', '--max-time', '10', '-w', '\n%{http_code}', ...args]);
  const at = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(at + 1)), body: stdout.slice(0, at) };
}

/** Sends `text` to 127.0.0.1:`port` on a fresh connection and resolves with everything answered before the close. */
export function rawExchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const s = createConnection(port, '127.0.0.1', () => s.write(text));
    s.on('data', (c: Buffer) => (out += c.toString()));
    s.once('close', () => resolve(out));
    s.once('error', reject);
  });
}

/** A Ready-list entry named `name` (loopback, port 1): for selection and routing tests that never connect. */
export function upstreamNamed(name: string): Upstream {
  return { name, provider: 'p', host: '127.0.0.1', port: 1, authorization: 'Basic x', egressIp: undefined };
}

/**
 * The fleet API's twin: the Ready list is whatever the test sets, narrowed by `provider` as the API
 * does (pools and labels are not modelled: an Upstream carries neither); reports and discoveries
 * are recorded.
 */
export interface MemoryFleetApi {
  api: FleetApi;
  set(list: Upstream[]): void;
  /** Leaves `name` out of `?for=domain` answers (what a report with a target does in the real API). */
  exclude(name: string, domain: string): void;
  reports: { name: string; report: ProxyReport }[];
  /** Every discovery request: its filters and domain. */
  discoveries: { filters: FleetFilters; forDomain: string | undefined }[];
}

export function createMemoryFleetApi(initial: Upstream[] = []): MemoryFleetApi {
  let list = initial;
  const excluded = new Set<string>();
  const fleet: MemoryFleetApi = {
    reports: [],
    discoveries: [],
    set: (l) => (list = l),
    exclude: (name, domain) => excluded.add(`${name}\n${domain}`),
    api: {
      discover(filters, forDomain) {
        fleet.discoveries.push({ filters, forDomain });
        return Promise.resolve(
          list.filter(
            (u) =>
              (filters.provider === undefined || u.provider === filters.provider) &&
              (!forDomain || !excluded.has(`${u.name}\n${forDomain}`)),
          ),
        );
      },
      report(name, report) {
        fleet.reports.push({ name, report });
        return Promise.resolve();
      },
    },
  };
  return fleet;
}

/** One stand-in fleet proxy: the same `proxy` package the process backend runs, with Basic auth. */
export interface TestProxy {
  upstream: Upstream;
  /** `Proxy-Authorization` of every request and CONNECT it received. */
  authorizations: (string | undefined)[];
  close(): Promise<void>;
}

/**
 * @param name - the proxy's name in the fleet
 * @param localAddress - the address it dials targets from (a loopback address: a distinct "egress IP")
 */
export async function startTestProxy(name: string, localAddress = '127.0.0.1'): Promise<TestProxy> {
  const user = `u-${name}`;
  const pass = `p-${name}-secret`;
  const expected = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
  const authorizations: (string | undefined)[] = [];
  const server = createProxy(http.createServer());
  server.authenticate = (req) => {
    authorizations.push(req.headers['proxy-authorization']);
    return req.headers['proxy-authorization'] === expected;
  };
  server.localAddress = localAddress;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    upstream: { name, provider: 'test', host: '127.0.0.1', port, authorization: expected, egressIp: localAddress },
    authorizations,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A target that answers `{ip, headers}` and can play a domain that bans some egress addresses. */
export interface TestTarget {
  url: string;
  /** Headers of every request it received, lower-cased names. */
  seen: http.IncomingHttpHeaders[];
  /** Caller addresses answered with `status` (default 403). */
  banned: Set<string>;
  close(): Promise<void>;
}

/**
 * @param options.pages - when set, `GET /` answers an HTML index linking `/page/1` … `/page/{pages}` (a site to crawl)
 * @param options.status - what banned callers get (default 403)
 */
export async function startTestTarget(options: { pages?: number; status?: number } = {}): Promise<TestTarget> {
  const { pages, status = 403 } = options;
  const host = '127.0.0.1';
  const seen: http.IncomingHttpHeaders[] = [];
  const banned = new Set<string>();
  const server = http.createServer((req, res) => {
    seen.push(req.headers);
    const ip = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    if (pages !== undefined && req.url === '/') {
      const links = Array.from({ length: pages }, (_, i) => `<a href="/page/${i + 1}">${i + 1}</a>`).join('\n');
      return void res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><body>${links}</body></html>`);
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (banned.has(ip)) return void res.writeHead(status, { 'content-type': 'text/plain' }).end('banned\n');
      const body = JSON.stringify({ ip, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}/`,
    seen,
    banned,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * A self-signed certificate for 127.0.0.1 and localhost, made with openssl (as the libvirt TLS
 * test does): `key` and `cert` as PEM text, and the cert's path for `curl --cacert`.
 */
export async function selfSignedCert(dir: string): Promise<{ key: string; cert: string; certFile: string }> {
  const keyFile = join(dir, 'target-key.pem');
  const certFile = join(dir, 'target-cert.pem');
  await promisify(execFile)('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '1',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
  ]); // prettier-ignore
  return { key: await readFile(keyFile, 'utf8'), cert: await readFile(certFile, 'utf8'), certFile };
}

/** An HTTPS target answering `{ip, headers}` (reached through CONNECT tunnels). */
export async function startTlsTarget(tls: { key: string; cert: string }): Promise<TestTarget> {
  const seen: http.IncomingHttpHeaders[] = [];
  const server = https.createServer(tls, (req, res) => {
    seen.push(req.headers);
    const ip = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ip, headers: req.headers }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    seen,
    banned: new Set(),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A loopback port nothing listens on now. */
async function freePort(): Promise<number> {
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', () => resolve()));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** Waits (up to 5 s) until `host:port` accepts connections. */
async function listening(host: string, port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const s = createConnection({ host, port }, () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A real tinyproxy (the proxy of the gcp, kubernetes and kvm guests) on loopback with Basic auth:
 * it answers HTTP/1.1 without `Connection: close` and then closes, which keep-alive clients trip on.
 */
export async function startTinyproxy(name: string, dir: string): Promise<TestProxy> {
  const port = await freePort();
  const conf = join(dir, `${name}.conf`);
  await writeFile(
    conf,
    [
      `Port ${port}`,
      'Listen 127.0.0.1',
      'Timeout 30',
      'MaxClients 64',
      'LogLevel Error',
      `BasicAuth u-${name} p-${name}`,
      '',
    ].join('\n'),
  );
  const child = spawn('/usr/bin/tinyproxy', ['-d', '-c', conf], { stdio: 'ignore' });
  await listening('127.0.0.1', port);
  const authorization = `Basic ${Buffer.from(`u-${name}:p-${name}`).toString('base64')}`;
  return {
    upstream: { name, provider: 'tinyproxy', host: '127.0.0.1', port, authorization, egressIp: '127.0.0.1' },
    authorizations: [],
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        if (child.pid) process.kill(child.pid, 'SIGTERM');
      }),
  };
}

/**
 * Debian's stunnel in front of a test proxy, as every fleet proxy has (shared/providers/stunnel.ts):
 * a fresh self-signed certificate in `dir`; the proxy's entry as discovery gives it with
 * `tlsUrl` and `tlsFingerprint`.
 */
export async function startTlsFront(proxy: TestProxy, dir: string): Promise<TestProxy> {
  const { host, port } = proxy.upstream;
  const cert = join(dir, `${proxy.upstream.name}.pem`);
  const key = join(dir, `${proxy.upstream.name}.key`);
  await promisify(execFile)('openssl', certificateArgs(cert, key));
  const tlsPort = await freePort();
  const conf = join(dir, `${proxy.upstream.name}-stunnel.conf`);
  await writeFile(conf, stunnelConfig({ accept: `${host}:${tlsPort}`, connect: `${host}:${port}`, cert, key }));
  const child = spawn('/usr/bin/stunnel4', [conf], { stdio: 'ignore' });
  await listening(host, tlsPort);
  const fingerprint = fingerprintOf(new X509Certificate(await readFile(cert)).raw);
  return {
    upstream: { ...proxy.upstream, port: tlsPort, tls: { fingerprint } },
    authorizations: proxy.authorizations,
    close: async () => {
      await new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      });
      await proxy.close();
    },
  };
}
