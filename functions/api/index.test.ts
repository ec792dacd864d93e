/** The api function as functions-framework serves it: the body cap holds for what the framework read, declared or chunked. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getTestServer } from '@google-cloud/functions-framework/testing';
import { MAX_BODY_BYTES } from '../../shared/api/handler.js';

let server: Server;
let url: string;

beforeAll(async () => {
  // The cap answers before the token, the store or the bus is touched: no emulator is needed.
  process.env['EGRESS_API_TOKENS'] = 'admin:function-token-0123456789';
  process.env['EGRESS_TELEMETRY'] = 'none';
  await import('./index.js');
  server = getTestServer('api');
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 60_000);

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** `bytes` of JSON, sent with a Content-Length or chunked (no declared length). */
function post(bytes: number, chunked: boolean): Promise<Response> {
  const text = JSON.stringify({ reason: 'banned', detail: 'x'.repeat(bytes) }).slice(0, bytes - 2) + '"}';
  const body = chunked
    ? new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(text));
          controller.close();
        },
      })
    : text;
  return fetch(`${url}/v1/proxies/p/reports`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    ...(chunked ? { duplex: 'half' } : {}),
  });
}

describe('the api function under functions-framework', () => {
  it.each([false, true])('a JSON body over 1 MiB (chunked: %s) answers 413 without a token', async (chunked) => {
    const res = await post(MAX_BODY_BYTES + 100, chunked);
    expect(res.status).toBe(413);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toEqual({
      error: {
        code: 'PayloadTooLarge',
        message: `the request body is ${MAX_BODY_BYTES + 100} bytes; the API takes at most ${MAX_BODY_BYTES}`,
      },
    });
  });

  it('a body within the cap reaches authentication', async () => {
    expect((await post(1000, true)).status).toBe(401);
  });
});
