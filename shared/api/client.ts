/**
 * The client of the HTTP API, typed by the route table (shared/api/routes.ts): the CLI, the gateway
 * and the dashboard each wrap it. Browser-safe: it imports no zod and nothing of Node; a client
 * given the answer schemas checks every answer with them.
 */
import { ApiError, isApiErrorCode } from './api-error.js';
import type { ApiAuth } from './cloud-run-auth.js';
import { ROUTES, type Answer, type AnswerSchemas, type RouteBodies, type RouteName, type Routes } from './routes.js';

/** Query parameters: `undefined` and `false` are left out, an array repeats its key. */
export type Query = Record<string, string | number | boolean | readonly string[] | undefined>;

/** What a call of route `K` sends: `name` for a `{name}` path, the body for a route that takes one. */
export type RouteInput<K extends RouteName> = (Routes[K]['path'] extends `${string}{name}${string}`
  ? { name: string }
  : { name?: never }) &
  (K extends keyof RouteBodies ? { body: RouteBodies[K] } : { body?: never }) & { query?: Query };

/** The input argument: optional where the route needs nothing. */
type InputArg<K extends RouteName> = object extends RouteInput<K> ? [input?: RouteInput<K>] : [input: RouteInput<K>];

export type PagedRoute = { [K in RouteName]: Routes[K] extends { paged: true } ? K : never }[RouteName];

/** One entry of a paged route's answer: its `items`, or the answer itself when that is a list. */
export type Item<K extends PagedRoute> =
  Answer<K> extends { items: (infer I)[] } ? I : Answer<K> extends (infer I)[] ? I : never;

export interface RouteClientOptions {
  /** The API's base URL; it may carry a path (a Cloud Functions URL ends in `/api`), which every route's path extends. */
  baseUrl: string;
  /** The bearer token; without one a 401 says to set EGRESS_TOKEN. */
  token?: string | undefined;
  /** A Google ID token for Cloud Run IAM in front of the API, and how its refusals read (shared/api/cloud-run-auth.ts). */
  auth?: ApiAuth | undefined;
  /** The answer schemas (`import * as schemas from './schema.js'`): every JSON answer is parsed by its route's. Without them answers are typed, not checked. */
  answers?: AnswerSchemas | undefined;
  /** Aborts every request (Ctrl-C): the abort is rethrown as it is, not as an ApiError. */
  signal?: AbortSignal | undefined;
  /** A request that takes longer is abandoned: an ApiError `Network`. */
  timeoutMs?: number | undefined;
}

export interface RouteClient {
  /**
   * One request; its answer when 2xx, unread.
   *
   * @throws ApiError for any other answer (the API's `{error}`, or `BadResponse`), `Network` when none came, `CloudRunIam` when IAM refused or no ID token could be had
   */
  send<K extends RouteName>(route: K, ...input: InputArg<K>): Promise<Response>;
  /** One request's JSON answer, parsed by the route's schema when the client has the schemas. */
  call<K extends RouteName>(route: K, ...input: InputArg<K>): Promise<Answer<K>>;
  /**
   * Page after page of a paged route, the cursor from each answer's `X-Next-Cursor`, until the last
   * or until `limit` entries (a page reads at most its `limit` proxies, so it may hold fewer).
   *
   * @param read - one page's entries (default: its parsed JSON's items)
   */
  every<K extends PagedRoute, T = Item<K>>(
    route: K,
    input: RouteInput<K>,
    options?: { limit?: number | undefined; read?: (res: Response) => Promise<T[]> },
  ): Promise<T[]>;
}

/** The URL of one call: the route's path under the base, `{name}` percent-encoded, the query appended. */
function urlOf(base: string, path: string, name: string | undefined, query: Query | undefined): URL {
  const url = new URL(
    path.replace('{name}', encodeURIComponent(name ?? '')).slice(1),
    base.endsWith('/') ? base : `${base}/`,
  );
  for (const [key, value] of Object.entries(query ?? {})) {
    for (const v of Array.isArray(value) ? value : [value])
      if (v !== undefined && v !== false) url.searchParams.append(key, String(v));
  }
  return url;
}

/** Why fetch gave no answer, as one line. */
function reason(err: unknown): string {
  if (err instanceof Error) return err.cause instanceof Error ? err.cause.message : err.message;
  return String(err);
}

/** The ApiError for a non-2xx answer: the API's `{error}` body when it sent one. */
function refusal(status: number, text: string, request: string, headers: Headers, hasToken: boolean): ApiError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  // Read field by field, without zod (the dashboard's bundle has none): anything else is not this API's error.
  const error: unknown = typeof body === 'object' && body !== null ? Reflect.get(body, 'error') : undefined;
  const part = (key: string): string | undefined => {
    const value: unknown = typeof error === 'object' && error !== null ? Reflect.get(error, key) : undefined;
    return typeof value === 'string' ? value : undefined;
  };
  const code = part('code');
  const message = part('message');
  if (code === undefined || !isApiErrorCode(code) || message === undefined)
    return new ApiError('BadResponse', `HTTP ${status} from ${request}: ${text.slice(0, 200)}`, { status });
  const hint = status === 401 && !hasToken ? ' (no token: set EGRESS_TOKEN)' : '';
  const retryAfter = Number(headers.get('retry-after') ?? Number.NaN);
  return new ApiError(code, `${message}${hint}`, {
    status,
    field: part('field'),
    retryAfterSeconds: Number.isFinite(retryAfter) ? retryAfter : undefined,
  });
}

/** The input as the request is built from it, whichever the route. */
interface AnyInput {
  name?: string | undefined;
  query?: Query | undefined;
  body?: unknown;
}

/** A paged answer's entries: its `items`, or the answer itself when that is a list. */
function itemsOf(answer: unknown): unknown[] {
  if (Array.isArray(answer)) return answer;
  const items: unknown = typeof answer === 'object' && answer !== null && 'items' in answer ? answer.items : undefined;
  return Array.isArray(items) ? items : [];
}

/**
 * @example
 * const api = createRouteClient({ baseUrl: 'http://127.0.0.1:8080', token, answers: schemas });
 * const proxy = await api.call('getProxy', { name: 'eu-1' });
 */
export function createRouteClient(options: RouteClientOptions): RouteClient {
  const { baseUrl, token, auth, answers, signal, timeoutMs } = options;

  async function headersOf(body: boolean): Promise<Record<string, string>> {
    let extra: Record<string, string> = {};
    try {
      extra = (await auth?.headers()) ?? {};
    } catch (err) {
      throw new ApiError('CloudRunIam', reason(err), { cause: err });
    }
    return {
      accept: 'application/json, text/plain',
      ...extra,
      ...(token && { authorization: `Bearer ${token}` }),
      ...(body && { 'content-type': 'application/json' }),
    };
  }

  /** One request and its 2xx answer, with `METHOD /path` for messages. */
  async function exchange(route: RouteName, input: AnyInput = {}): Promise<{ res: Response; request: string }> {
    const { method, path } = ROUTES[route];
    const url = urlOf(baseUrl, path, input.name, input.query);
    const request = `${method} ${url.pathname}`;
    const signals = [signal, timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs)].filter(
      (s): s is AbortSignal => s !== undefined,
    );
    const headers = await headersOf(input.body !== undefined);
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers,
        // The API never redirects; following one would carry X-Serverless-Authorization (which
        // fetch keeps across origins, unlike Authorization) to another host.
        redirect: 'error',
        cache: 'no-store',
        ...(input.body !== undefined && { body: JSON.stringify(input.body) }),
        ...(signals.length > 0 && { signal: AbortSignal.any(signals) }),
      });
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new ApiError('Network', `cannot reach the API at ${baseUrl}: ${reason(err)}`, { cause: err });
    }
    if (res.ok) return { res, request };
    const text = await res.text().catch(() => '');
    const refused = auth?.refusal(res.status, text);
    if (refused) throw new ApiError('CloudRunIam', refused, { status: res.status });
    throw refusal(res.status, text, request, res.headers, Boolean(token));
  }

  /** The answer's JSON (text for a `text` route), parsed by the route's schema when the client has them. */
  async function answerOf(route: RouteName, res: Response, request: string): Promise<unknown> {
    const { answer } = ROUTES[route];
    if (answer === 'text') return res.text();
    let value: unknown;
    try {
      value = await res.json();
    } catch {
      throw new ApiError('BadResponse', `the API answered ${request} with something that is not JSON`, {
        status: res.status,
      });
    }
    if (!answers) return value;
    const parsed = answers[answer].safeParse(value);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    const at = issue?.path.length ? ` at ${issue.path.join('.')}` : '';
    throw new ApiError('BadResponse', `unexpected answer to ${request}${at}: ${issue?.message ?? 'invalid'}`, {
      status: res.status,
    });
  }

  return {
    async send(route, ...[input]) {
      return (await exchange(route, input)).res;
    },
    async call<K extends RouteName>(route: K, ...[input]: InputArg<K>) {
      const { res, request } = await exchange(route, input);
      // Checked by the route's own schema when the client has them; typed only, in the dashboard.
      return (await answerOf(route, res, request)) as Answer<K>;
    },
    async every<K extends PagedRoute, T>(
      route: K,
      input: RouteInput<K>,
      { limit, read }: { limit?: number | undefined; read?: (res: Response) => Promise<T[]> } = {},
    ) {
      const entries: unknown[] = [];
      let cursor: string | null = null;
      do {
        const { res, request } = await exchange(route, {
          ...input,
          query: { ...input.query, cursor: cursor ?? undefined },
        });
        entries.push(...(read ? await read(res) : itemsOf(await answerOf(route, res, request))));
        cursor = res.headers.get('x-next-cursor');
      } while (cursor !== null && (limit === undefined || entries.length < limit));
      // Each entry is the route's item, checked with the rest of its answer, or what `read` gave.
      return (limit === undefined ? entries : entries.slice(0, limit)) as T[];
    },
  };
}
