/**
 * Reaching the API when Cloud Run IAM guards it: whether to send a Google ID token, for which
 * audience, in `X-Serverless-Authorization` beside the product's bearer token in `Authorization`,
 * and Cloud Run's refusals told apart from the API's own errors. The CLI and the gateway both use it.
 *
 * Cloud Run checks the ID token in `X-Serverless-Authorization` when that header is present and
 * passes `Authorization` through to the container untouched
 * (https://cloud.google.com/run/docs/authenticating/service-to-service#acquire-token, confirmed by
 * the Cloud Run PM in GoogleCloudPlatform/cloud-run-proxy#25), so the API still checks its own token.
 */
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { createIdTokenCache, type IdTokenCache, type IdTokenMinter } from './id-token.js';
import { apiErrorBodySchema } from './schema.js';
import { isLoopbackHost } from '../domain/hosts.js';

/** `EGRESS_API_AUTH`: `auto` sends an ID token to Cloud Run URLs only; `google` always; `none` never. */
export const API_AUTH_MODES = ['auto', 'google', 'none'] as const;
const modeSchema = z.enum(API_AUTH_MODES);

/** How the clients authenticate to Cloud Run IAM in front of the API, resolved once from the settings. */
export interface ApiAuthSettings {
  /** `google`: an ID token in `X-Serverless-Authorization` on every request; `none`: no ID token. */
  mode: 'google' | 'none';
  /** Why that mode, for messages (`EGRESS_API_AUTH=none`, `the API URL is not a Cloud Run URL`). */
  reason: string;
  /** The `aud` the ID token is minted for: the service's URL unless `EGRESS_API_AUDIENCE` says otherwise. */
  audience: string;
  /** `EGRESS_ID_TOKEN`: a token to send as it is instead of minting one from ADC. */
  idToken?: string | undefined;
}

/** The variables read, by their names; `undefined` or `''` means unset. */
export type ApiAuthVariables = Partial<Record<'EGRESS_API_AUTH' | 'EGRESS_API_AUDIENCE' | 'EGRESS_ID_TOKEN', string>>;

/** `https://SERVICE-HASH-REGION.a.run.app`, `https://SERVICE-NUMBER.REGION.run.app`, or a function's `https://REGION-PROJECT.cloudfunctions.net/NAME`. */
export function isCloudRunUrl(url: URL): boolean {
  return url.protocol === 'https:' && /\.(run\.app|cloudfunctions\.net)$/.test(url.hostname);
}

/**
 * The audience Cloud Run accepts: the service URL (scheme and host) for a `run.app` URL; for the
 * `cloudfunctions.net` form the function's full URL, host and name, as google-auth-library found
 * (googleapis/google-auth-library-nodejs#1208).
 */
export function defaultAudience(url: URL): string {
  if (url.hostname.endsWith('.cloudfunctions.net')) {
    const name = url.pathname.split('/').find(Boolean);
    return name ? `${url.origin}/${name}` : url.origin;
  }
  return url.origin;
}

/**
 * Resolves the settings against the API URL.
 *
 * @param apiUrl - the API base URL (already checked to be http(s))
 * @param vars - `EGRESS_API_AUTH`, `EGRESS_API_AUDIENCE`, `EGRESS_ID_TOKEN`
 * @throws ValidationError naming the variable
 */
export function apiAuthSettings(apiUrl: string, vars: ApiAuthVariables): ApiAuthSettings {
  const url = new URL(apiUrl);
  const parsed = modeSchema.safeParse(vars.EGRESS_API_AUTH || 'auto');
  if (!parsed.success)
    throw new ValidationError(
      'EGRESS_API_AUTH',
      `must be ${API_AUTH_MODES.join(', ')} (got "${vars.EGRESS_API_AUTH}")`,
    );
  const asked = parsed.data;
  let audience = defaultAudience(url);
  if (vars.EGRESS_API_AUDIENCE) {
    if (!URL.canParse(vars.EGRESS_API_AUDIENCE) || !/^https?:$/.test(new URL(vars.EGRESS_API_AUDIENCE).protocol))
      throw new ValidationError('EGRESS_API_AUDIENCE', `must be the service's URL (got "${vars.EGRESS_API_AUDIENCE}")`);
    audience = vars.EGRESS_API_AUDIENCE.replace(/\/+$/, '');
  }
  const cloudRun = isCloudRunUrl(url);
  const mode = asked === 'auto' ? (cloudRun ? 'google' : 'none') : asked;
  const reason =
    asked === 'auto'
      ? `EGRESS_API_AUTH=auto and ${url.host} is ${cloudRun ? '' : 'not '}a Cloud Run host`
      : `EGRESS_API_AUTH=${asked}`;
  // An ID token is a bearer credential: never over plain HTTP beyond this machine.
  if (mode === 'google' && url.protocol === 'http:' && !isLoopbackHost(url.hostname))
    throw new ValidationError(
      'EGRESS_API_AUTH',
      `google sends an ID token; the API URL must be https (got ${url.origin})`,
    );
  return { mode, reason, audience, idToken: vars.EGRESS_ID_TOKEN || undefined };
}

/** What a client adds to each request and how it reads a refusal. */
export interface ApiAuth {
  /** `{'x-serverless-authorization': 'Bearer …'}` when sending ID tokens, else `{}`. @throws IdTokenError */
  headers(): Promise<Record<string, string>>;
  /**
   * A 401 or 403 whose body is not the API's JSON error came from Cloud Run IAM in front of it.
   *
   * @returns what to tell the user, or undefined when the answer is the API's own (or another status)
   */
  refusal(status: number, body: string): string | undefined;
}

/** The refusal page as one short line: tags and spacing dropped. */
function pageText(body: string): string {
  return body
    .replace(/<title>[^<]*<\/title>/i, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .replace(/ ([.,)])/g, '$1')
    .trim()
    .slice(0, 160);
}

/** The IAM member for an identity: service accounts end in `gserviceaccount.com`. */
function member(identity: string): string {
  return identity.endsWith('.gserviceaccount.com') ? `serviceAccount:${identity}` : `user:${identity}`;
}

/**
 * @param settings - from {@link apiAuthSettings}; undefined sends no ID token (the local stack)
 * @param options.minter - how ID tokens are minted (default: Application Default Credentials)
 * @param options.now - the clock of the token cache
 */
export function createApiAuth(
  settings: ApiAuthSettings | undefined,
  options: { minter?: () => Promise<IdTokenMinter>; now?: () => number } = {},
): ApiAuth {
  const tokens: IdTokenCache | undefined =
    settings?.mode === 'google'
      ? createIdTokenCache(settings.audience, { given: settings.idToken, ...options })
      : undefined;
  return {
    async headers(): Promise<Record<string, string>> {
      if (!tokens) return {};
      return { 'x-serverless-authorization': `Bearer ${(await tokens.get()).token}` };
    },
    refusal(status, body) {
      if (status !== 401 && status !== 403) return undefined;
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      if (apiErrorBodySchema.safeParse(json).success) return undefined;
      const page = pageText(body) || '(empty body)';
      if (!tokens)
        return (
          `Cloud Run IAM refused the request before it reached the API (HTTP ${status}: ${page}): ` +
          `no Google ID token was sent (${settings?.reason ?? 'not configured'}); ` +
          'set EGRESS_API_AUTH=google to send one from Application Default Credentials, ' +
          'or EGRESS_ID_TOKEN=$(gcloud auth print-identity-token)'
        );
      const who = tokens.identity ?? 'the caller';
      if (status === 401)
        return (
          `Cloud Run IAM refused the ID token of ${who} (HTTP 401: ${page}): it is not valid for this ` +
          `service; its audience ${settings?.audience ?? ''} must be the service's https://….run.app URL ` +
          '(set EGRESS_API_AUDIENCE when the API URL is another host name), and it must not have expired'
        );
      return (
        `Cloud Run IAM refused: grant roles/run.invoker to ${member(who)} on the API's Cloud Run service ` +
        `(HTTP 403: ${page}): add it to Terraform's api_invokers and apply, or ` +
        `gcloud run services add-iam-policy-binding SERVICE --region REGION --member ${member(who)} --role roles/run.invoker`
      );
    },
  };
}
