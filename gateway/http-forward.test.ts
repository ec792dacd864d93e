/** Plain-HTTP forwarding on the wire: the exact bytes a fleet proxy receives and a client gets back. */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from './server.js';
import { createMemoryFleetApi } from './testing.js';

/** What the raw fleet proxy answers: repeated fields in mixed spelling, hop-by-hop ones, a chunked body. */
const ANSWER = [
  'HTTP/1.1 200 OK',
  'Set-Cookie: a=1',
  'X-Mid: m',
  'set-cookie: b=2',
  'Connection: close, X-Hop',
  'X-Hop: 1',
  'Keep-Alive: timeout=5',
  'Proxy-Authenticate: Basic realm="fleet"',
  'Transfer-Encoding: chunked',
  '',
  '3\r\nok\n\r\n0\r\n\r\n',
].join('\r\n');

let proxy: net.Server;
let gw: Gateway;
/** Each request head (and body) the fleet proxy received, as text. */
const received: string[] = [];
const AUTH = `Proxy-Authorization: Basic ${Buffer.from('gw:pw').toString('base64')}\r\n`;

/** A fleet proxy at the byte level: reads one request (head, then Content-Length or chunked body), answers ANSWER. */
function rawProxy(): net.Server {
  return net.createServer((socket) => {
    let text = '';
    let answered = false;
    socket.on('data', (chunk: Buffer) => {
      // Like tinyproxy: one request per connection; one sent after the answer meets a closed socket.
      if (answered) {
        socket.destroy();
        return;
      }
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
      const chunked = /\r\ntransfer-encoding: chunked/i.test(text.slice(0, end));
      const complete = chunked ? text.endsWith('0\r\n\r\n') : text.length >= end + 4 + length;
      if (!complete) return;
      answered = true;
      received.push(text);
      socket.end(ANSWER);
    });
  });
}

/** Sends `request` to the gateway on a new connection; resolves with all it answers. */
function send(request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const s = net.connect(gw.address.port, '127.0.0.1', () => s.write(request));
    s.on('data', (c: Buffer) => (out += c.toString('latin1')));
    s.once('close', () => resolve(out));
    s.once('error', reject);
  });
}
const headOf = (text: string) => text.slice(0, text.indexOf('\r\n\r\n')).split('\r\n').slice(1);

beforeAll(async () => {
  proxy = rawProxy();
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
  const port = (proxy.address() as net.AddressInfo).port;
  const upstream = { name: 'raw', provider: 'test', host: '127.0.0.1', port, authorization: 'Basic ZmxlZXQ=' };
  gw = await startGateway({
    fleet: createMemoryFleetApi([{ ...upstream, egressIp: undefined }]).api,
    listen: { host: '127.0.0.1', port: 0 },
    credentials: { username: 'gw', password: 'pw' },
    refreshMs: 60_000,
  });
});
afterAll(async () => {
  await gw.close();
  await new Promise<void>((r) => proxy.close(() => r()));
});

describe('plain-HTTP forwarding on the wire', () => {
  it('sends the end-to-end fields in their order and spelling, then the proxy its own credentials', async () => {
    await send(
      `GET http://t.example:81/x HTTP/1.1\r\nHost: t.example:81\r\n${AUTH}X-A: 1\r\nConnection: keep-alive, X-Gone\r\nx-a: 2\r\nX-Gone: g\r\nTE: trailers\r\nConnection: close\r\n\r\n`,
    );
    const head = headOf(received.at(-1) ?? '');
    expect(head.slice(0, 4)).toEqual(['Host: t.example:81', 'X-A: 1', 'x-a: 2', 'Proxy-Authorization: Basic ZmxlZXQ=']);
    expect(head.filter((h) => /^(x-gone|te):/i.test(h))).toEqual([]);
    // Only the gateway's own Connection field for its hop to the proxy, none of the client's.
    expect(head.filter((h) => /^connection:/i.test(h))).toHaveLength(1);
    expect(head.at(-1)).toMatch(/^Connection: (keep-alive|close)$/);
    expect(received.at(-1)).not.toContain(Buffer.from('gw:pw').toString('base64'));
  });

  it("answers with the proxy's end-to-end fields in order and spelling, without its hop-by-hop ones", async () => {
    const answer = await send(`GET http://t.example/ HTTP/1.1\r\nHost: t.example\r\n${AUTH}Connection: close\r\n\r\n`);
    const head = headOf(answer);
    expect(head.slice(0, 3)).toEqual(['Set-Cookie: a=1', 'X-Mid: m', 'set-cookie: b=2']);
    expect(head.filter((h) => /^(x-hop|keep-alive|proxy-authenticate):/i.test(h))).toEqual([]);
    expect(answer.endsWith('ok\n\r\n0\r\n\r\n')).toBe(true);
  });

  it.each([
    [
      'an HTTP/1.0 request without Host gets the target host',
      'GET http://t.example:8080/a HTTP/1.0\r\n',
      '',
      ['Host: t.example:8080'],
    ],
    [
      'a POST without a body goes out with Content-Length: 0, not chunked',
      'POST http://t.example/ HTTP/1.1\r\nHost: t.example\r\n',
      '',
      ['Content-Length: 0'],
    ],
    ['a GET without a body goes out without framing', 'GET http://t.example/ HTTP/1.1\r\nHost: t.example\r\n', '', []],
    [
      'a chunked body goes out buffered, with its length',
      'PUT http://t.example/ HTTP/1.1\r\nHost: t.example\r\nTransfer-Encoding: chunked\r\n',
      '3\r\nabc\r\n0\r\n\r\n',
      ['Content-Length: 3'],
    ],
  ])('%s', async (_what, line, body, framing) => {
    await send(`${line}${AUTH}Connection: close\r\n\r\n${body}`);
    const sent = received.at(-1) ?? '';
    const head = headOf(sent);
    expect(
      head.filter((h) => /^(host|content-length|transfer-encoding):/i.test(h) && !/^Host: t\.example$/.test(h)),
    ).toEqual(framing);
    expect(sent.slice(sent.indexOf('\r\n\r\n') + 4)).toBe(body === '' ? '' : 'abc');
  });
});

describe('a fleet proxy listed with TLS whose port never completes the handshake', () => {
  it('is given up after connectTimeoutMs: the request is answered, not held until the peer closes', async () => {
    // What chaos met: a stale TLS address now held by a plain proxy, which reads the ClientHello as
    // the start of a request and waits for the rest (37.6 s, until the stack stopped).
    const silent = net.createServer((s) => s.on('data', () => undefined));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    const port = (silent.address() as net.AddressInfo).port;
    const upstream = {
      name: 'silent',
      provider: 'test',
      host: '127.0.0.1',
      port,
      authorization: 'Basic ZmxlZXQ=',
      egressIp: undefined,
      tls: { fingerprint: 'ab'.repeat(32) },
    };
    const g = await startGateway({
      fleet: createMemoryFleetApi([upstream]).api,
      listen: { host: '127.0.0.1', port: 0 },
      credentials: { username: 'gw', password: 'pw' },
      refreshMs: 60_000,
      connectTimeoutMs: 300,
    });
    try {
      const started = Date.now();
      const answer = await new Promise<string>((resolve, reject) => {
        let out = '';
        const s = net.connect(g.address.port, '127.0.0.1', () =>
          s.write(`GET http://t.example/ HTTP/1.1\r\nHost: t.example\r\n${AUTH}Connection: close\r\n\r\n`),
        );
        s.on('data', (c: Buffer) => (out += c.toString('latin1')));
        s.once('close', () => resolve(out));
        s.once('error', reject);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 502 /);
      expect(answer).toContain('silent: ');
      expect(answer).toMatch(/no (TLS session|connection) within 300 ms/);
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      await g.close();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  }, 15_000);
});
