/** Calls the API handler in-process as an HTTP client would: a method, a target with its query, a body, a bearer token. */
import type { ApiDeps } from '../../shared/api/deps.js';
import { handleApi } from '../../shared/api/handler.js';
import type { ApiRequest, ApiResponse } from '../../shared/api/http.js';

/**
 * @param target - path and query, e.g. `/v1/discovery?pool=crawl`
 * @param token - the bearer token, or null for none
 */
export function callApi(
  deps: ApiDeps,
  method: string,
  target: string,
  body: unknown,
  token: string | null,
): Promise<ApiResponse> {
  const url = new URL(target, 'http://x');
  const req: ApiRequest = {
    method,
    path: url.pathname,
    query: url.searchParams,
    headers: token ? { authorization: `Bearer ${token}` } : {},
    body,
  };
  return handleApi(deps, req);
}
