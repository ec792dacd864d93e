/** Cloud Function `api` (HTTP): the JSON API of docs/api.md and the dashboard page. */
import { readFileSync } from 'node:fs';
import { http } from '@google-cloud/functions-framework';
import type { ApiDeps } from '../../shared/api/deps.js';
import { DiscoveryCache } from '../../shared/api/discovery-cache.js';
import { handleApi } from '../../shared/api/handler.js';
import { tracedHttp } from '../../shared/function-handler.js';

/** The dashboard page the build puts beside this file (absent when run from source). */
function dashboard(): string | undefined {
  try {
    return readFileSync(new URL('./dashboard.html', import.meta.url), 'utf8');
  } catch {
    return undefined;
  }
}

let deps: ApiDeps | undefined;

http('api', async (req, res) => {
  const url = new URL(req.originalUrl || req.url, 'http://api.local');
  const path = url.pathname.replace(/\/+$/, '') || '/';
  await tracedHttp('api', { method: req.method, path, headers: req.headers }, async (rt) => {
    deps ??= { ...rt, dashboardHtml: dashboard(), discoveryCache: new DiscoveryCache() };
    // A caller that closes the request (the gateway's fetch timeout, a front's bound) gets no
    // answer: the work for it stops at its next step instead of holding reads and locks for nobody.
    const gone = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    const response = await handleApi(deps, {
      method: req.method,
      path,
      query: url.searchParams,
      headers: req.headers,
      body: req.body as unknown,
      // The framework has read the whole body already (its limit is 1 GB); a chunked body declares
      // no length, so its size as received is what the API's own cap is checked against.
      bodyBytes: req.rawBody?.length,
      signal: gone.signal,
    });
    if (gone.signal.aborted) return 499;
    for (const [k, v] of Object.entries(response.headers ?? {})) res.setHeader(k, v);
    if (typeof response.body === 'string') res.status(response.status).send(response.body);
    else res.status(response.status).json(response.body);
    return response.status;
  });
});
