/** The front before a local function: its port stays up while the instance behind it comes and goes. */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../../test/support/eventually.js';
import { startFront, type Front } from './front.js';

const HOST = '127.0.0.1';
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Requests at the stand-in instances that will never be answered, and those of them whose connection closed. */
let hanging = 0;
const hangingClosed = new Set<string>();

/** A stand-in instance: echoes method, path, a header and the body; `/hang` is never answered. */
async function instance(port = 0): Promise<Server> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url?.startsWith('/hang')) {
        res.once('close', () => hangingClosed.add(req.url ?? ''));
        return void hanging++;
      }
      res.writeHead(201, { 'x-seen': String(req.headers['x-test']), 'content-type': 'application/json' });
      res.end(JSON.stringify({ method: req.method, path: req.url, body }));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, HOST, resolve));
  cleanups.push(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))));
  return server;
}

/** A port nothing listens on (taken from the kernel, then released). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, HOST, resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

async function front(instancePort: number, waitMs?: number, timeoutMs?: number): Promise<Front> {
  const f = await startFront({
    host: HOST,
    port: 0,
    instancePort,
    ...(waitMs !== undefined && { waitMs }),
    ...(timeoutMs !== undefined && { timeoutMs }),
  });
  cleanups.push(() => f.close());
  return f;
}

function post(
  port: number,
  path: string,
  body: string,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: HOST, port, method: 'POST', path, headers: { 'x-test': 'yes' } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.once('error', reject);
    req.end(body);
  });
}

/** Waits until `done()`, checking every 20 ms; fails after 5 s saying what it waited for. */
const until = (done: () => boolean, what: string) =>
  eventually(
    () => {
      if (!done()) throw new Error(`not within 5 s: ${what}`);
    },
    5000,
    20,
  );

describe('a function front', () => {
  it('passes the request and the answer through unchanged', async () => {
    const target = await instance();
    const f = await front((target.address() as AddressInfo).port);
    const answer = await post(f.port, '/projects/p/topics/t?x=1', '{"a":1}');
    expect(answer.status).toBe(201);
    expect(answer.headers['x-seen']).toBe('yes');
    expect(JSON.parse(answer.body)).toEqual({ method: 'POST', path: '/projects/p/topics/t?x=1', body: '{"a":1}' });
  });

  it('holds a request while no instance listens and sends it to the next one', async () => {
    const port = await closedPort();
    const f = await front(port);
    const answer = post(f.port, '/held', 'body');
    await until(() => f.waiting() === 1, 'the request waiting for an instance');
    await instance(port);
    expect(await answer).toMatchObject({ status: 201 });
    expect(JSON.parse((await answer).body)).toMatchObject({ path: '/held', body: 'body' });
    expect(f.waiting()).toBe(0);
  });

  it('answers 503 when the instance dies before answering', async () => {
    const target = await instance();
    const f = await front((target.address() as AddressInfo).port);
    const answer = post(f.port, '/hang', '');
    await until(() => hanging === 1, 'the request at the instance');
    target.closeAllConnections();
    const got = await answer;
    expect(got.status).toBe(503);
    expect(got.body).toMatch(/the instance stopped before answering/);
  });

  it('answers 503 when no instance listens within its wait', async () => {
    const f = await front(await closedPort(), 300);
    const got = await post(f.port, '/', '');
    expect(got.status).toBe(503);
    expect(got.body).toMatch(/no instance of this function listens after 300 ms/);
  });

  it("answers 504 past the function's timeout and closes the instance's connection", async () => {
    const target = await instance();
    const f = await front((target.address() as AddressInfo).port, undefined, 300);
    const got = await post(f.port, '/hang-timeout', '');
    expect(got.status).toBe(504);
    expect(got.body).toMatch(/did not answer within its timeout of 300 ms/);
    await until(() => hangingClosed.has('/hang-timeout'), "the instance's request closed");
  });

  it("a client that closes its request closes the instance's, so the function sees it abandoned", async () => {
    const target = await instance();
    const f = await front((target.address() as AddressInfo).port);
    const before = hanging;
    const req = request({ host: HOST, port: f.port, method: 'POST', path: '/hang-abandoned' });
    req.once('error', () => undefined);
    req.end('');
    await until(() => hanging === before + 1, 'the request at the instance');
    req.destroy();
    await until(() => hangingClosed.has('/hang-abandoned'), "the instance's request closed");
  });
});
