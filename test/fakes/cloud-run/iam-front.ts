/**
 * Cloud Run's front end for a service that requires authentication, on 127.0.0.1, in front of a
 * real upstream (the API on test/support/api-server.ts). What it keeps of the real one:
 *
 * - The ID token is read from `X-Serverless-Authorization` when present, else from
 *   `Authorization`; with both, `Authorization` is passed to the container as it came
 *   (https://cloud.google.com/run/docs/authenticating/service-to-service#acquire-token).
 * - Its `aud` must be the service's URL (here the front's own origin) or a configured custom
 *   audience, its signature Google's, and it must not have expired; otherwise 401
 *   (https://cloud.google.com/run/docs/authenticating/service-to-service#acquire-token).
 * - No token, or a valid one for an identity without `roles/run.invoker`: 403
 *   (https://cloud.google.com/run/docs/troubleshooting, "403 Forbidden ... Your client does not
 *   have permission to get URL"). Refusals are Google's HTML error page, not the API's JSON.
 * - The forwarded token has its signature replaced
 *   (https://cloud.google.com/run/docs/troubleshooting#signature-removed).
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GoogleIdentity } from './google-identity.js';

export interface IamFront {
  url: string;
  /** Emails with `roles/run.invoker` on the service; change it to grant or revoke. */
  invokers: Set<string>;
  /** Every request: the identity admitted, or the status it was refused with. */
  seen: { path: string; identity?: string; refused?: number }[];
  close(): Promise<void>;
}

/** Google's error page, in the shape Cloud Run serves it. */
function refuse(res: ServerResponse, status: 401 | 403, path: string): void {
  const title = status === 401 ? '401 Unauthorized' : '403 Forbidden';
  const detail =
    status === 401
      ? `Your client does not have permission to the requested URL <code>${path}</code>.`
      : `Your client does not have permission to get URL <code>${path}</code> from this server.`;
  const headers: Record<string, string> = { 'content-type': 'text/html; charset=UTF-8' };
  if (status === 401)
    headers['www-authenticate'] =
      'Bearer error="invalid_token" error_description="The access token could not be verified"';
  res
    .writeHead(status, headers)
    .end(
      `<html><head><meta http-equiv="content-type" content="text/html;charset=utf-8">\n<title>${title}</title>\n</head>\n` +
        `<body text=#000000 bgcolor=#ffffff>\n<h1>Error: ${title.slice(4)}</h1>\n<h2>${detail}</h2>\n<h2></h2>\n</body></html>\n`,
    );
}

const bearer = (value: string | undefined) => /^Bearer (\S+)$/.exec(value ?? '')?.[1];

/**
 * @param upstream - the service's container (`http://127.0.0.1:PORT`)
 * @param options.audiences - custom audiences accepted beside the front's own URL
 * @param options.now - the front's clock (for `exp`)
 */
export async function startIamFront(
  identity: GoogleIdentity,
  upstream: string,
  options: { invokers?: Iterable<string>; audiences?: string[]; now?: () => number } = {},
): Promise<IamFront> {
  const invokers = new Set(options.invokers ?? []);
  const seen: IamFront['seen'] = [];
  const now = options.now ?? Date.now;
  let origin = '';
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://front').pathname;
    const serverless = [req.headers['x-serverless-authorization'] ?? []].flat()[0];
    const header = serverless === undefined ? 'authorization' : 'x-serverless-authorization';
    const token = bearer(serverless ?? req.headers.authorization);
    if (!token) {
      seen.push({ path, refused: 403 });
      return refuse(res, 403, path);
    }
    const claims = identity.verify(token, now());
    if ('invalid' in claims || ![origin, ...(options.audiences ?? [])].includes(claims.aud)) {
      seen.push({ path, refused: 401 });
      return refuse(res, 401, path);
    }
    if (!invokers.has(claims.email)) {
      seen.push({ path, identity: claims.email, refused: 403 });
      return refuse(res, 403, path);
    }
    seen.push({ path, identity: claims.email });
    const headers = { ...req.headers, [header]: `Bearer ${token.replace(/[^.]+$/, 'SIGNATURE_REMOVED_BY_GOOGLE')}` };
    const target = new URL(req.url ?? '/', upstream);
    const forward = request(target, { method: req.method, headers: { ...headers, host: target.host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', (err) => res.writeHead(503, { 'content-type': 'text/plain' }).end(String(err)));
    req.pipe(forward);
  };
  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: origin,
    invokers,
    seen,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
