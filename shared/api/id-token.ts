/** Google ID tokens for one audience, from Application Default Credentials or as given, cached until near their expiry. */
import { z } from 'zod';

/** No ID token could be had: no credentials, credentials that cannot mint one, or a given token that expired. */
export class IdTokenError extends Error {
  override readonly name = 'IdTokenError';
}

/** The claims read from a token's payload (not verified: the token is our own, Cloud Run verifies it). */
const claimsSchema = z.looseObject({
  exp: z.number(),
  email: z.string().optional(),
  sub: z.string().optional(),
});

/** A token, when it expires (ms since the epoch), and whom it names. */
export interface IdToken {
  token: string;
  expiresAt: number;
  /** The `email` claim (or `sub`): the identity Cloud Run IAM checks. */
  identity: string;
}

/**
 * Reads a JWT's payload.
 *
 * @param what - names the token in the error (`EGRESS_ID_TOKEN`, `the ID token from ADC`)
 * @throws IdTokenError when it is not a JWT with an `exp` claim
 */
export function readIdToken(token: string, what: string): IdToken {
  const payload = token.split('.')[1];
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString('utf8'));
  } catch {
    json = undefined;
  }
  const claims = claimsSchema.safeParse(json);
  if (!claims.success) throw new IdTokenError(`${what} is not a Google ID token (a JWT with an exp claim)`);
  return { token, expiresAt: claims.data.exp * 1000, identity: claims.data.email ?? claims.data.sub ?? 'unknown' };
}

/** Mints a fresh token for an audience (`fetchIdToken` of google-auth-library's clients). */
export type IdTokenMinter = (audience: string) => Promise<string>;

/** What to do so that an ID token can be had; appended to every ADC failure. */
export const ID_TOKEN_FIXES =
  'give the client a service account identity: `gcloud auth application-default login ' +
  '--impersonate-service-account SA@PROJECT.iam.gserviceaccount.com` (needs roles/iam.serviceAccountTokenCreator on it), ' +
  'a service account key in GOOGLE_APPLICATION_CREDENTIALS, or the metadata server of a Google Cloud VM; ' +
  'or pass a token: EGRESS_ID_TOKEN=$(gcloud auth print-identity-token) (valid one hour); ' +
  'or EGRESS_API_AUTH=none when the API admits allUsers';

/**
 * The ADC minter. Of google-auth-library 10.9.1's clients, `Compute` (metadata server), `JWT`
 * (service account key) and `Impersonated` mint a token for the audience asked for. Its
 * `UserRefreshClient` (`gcloud auth application-default login`) has a `fetchIdToken` too, but
 * Google's token endpoint ignores the audience for user credentials: the token names gcloud's own
 * OAuth client (GoogleCloudPlatform/cloud-run-proxy#10), so it is refused here rather than at
 * Cloud Run. External-account clients (workload identity federation) have no `fetchIdToken`.
 *
 * @throws IdTokenError naming the credential and the fix
 */
export async function adcMinter(): Promise<IdTokenMinter> {
  // Loaded on first use only: the local stack and a public API never need it.
  const { GoogleAuth, UserRefreshClient } = await import('google-auth-library');
  let client: Awaited<ReturnType<InstanceType<typeof GoogleAuth>['getClient']>>;
  try {
    client = await new GoogleAuth().getClient();
  } catch (err) {
    const why = err instanceof Error ? err.message.split('. ')[0] : String(err);
    throw new IdTokenError(`no Application Default Credentials (${why}): ${ID_TOKEN_FIXES}`);
  }
  if (client instanceof UserRefreshClient)
    throw new IdTokenError(
      `Application Default Credentials are user credentials (gcloud auth application-default login), ` +
        `which cannot mint an ID token for the API's URL: ${ID_TOKEN_FIXES}`,
    );
  if (!('fetchIdToken' in client))
    throw new IdTokenError(
      `Application Default Credentials of type ${client.constructor.name} (GOOGLE_APPLICATION_CREDENTIALS) ` +
        `cannot mint ID tokens: ${ID_TOKEN_FIXES}`,
    );
  return (audience) => client.fetchIdToken(audience);
}

/** Refresh this long before `exp`: google-auth-library's own `eagerRefreshThresholdMillis`. */
export const REFRESH_BEFORE_MS = 5 * 60_000;

/** One audience's token, minted when missing or within {@link REFRESH_BEFORE_MS} of its expiry. */
export interface IdTokenCache {
  get(): Promise<IdToken>;
  /** The identity of the last token handed out, if any (named in Cloud Run's refusals). */
  readonly identity: string | undefined;
}

/**
 * @param audience - the `aud` to ask for
 * @param options.given - a token to use as it is (`EGRESS_ID_TOKEN`); it cannot be refreshed
 * @param options.minter - how to mint one (default: {@link adcMinter}, resolved on first use)
 * @param options.now - the clock (tests move it)
 */
export function createIdTokenCache(
  audience: string,
  options: { given?: string | undefined; minter?: () => Promise<IdTokenMinter>; now?: () => number } = {},
): IdTokenCache {
  const now = options.now ?? Date.now;
  let cached: IdToken | undefined;
  let minting: Promise<IdToken> | undefined;
  let minter: Promise<IdTokenMinter> | undefined;

  const mint = async (): Promise<IdToken> => {
    if (options.given !== undefined) {
      const given = readIdToken(options.given, 'EGRESS_ID_TOKEN');
      if (now() >= given.expiresAt)
        throw new IdTokenError(
          `EGRESS_ID_TOKEN expired at ${new Date(given.expiresAt).toISOString()}: ` +
            'export EGRESS_ID_TOKEN=$(gcloud auth print-identity-token) again, or unset it to use Application Default Credentials',
        );
      return given;
    }
    // A failed lookup is not kept: the next call tries again (a metadata server may come back).
    minter ??= (options.minter ?? adcMinter)().catch((err: unknown) => {
      minter = undefined;
      throw err;
    });
    const fetch = await minter;
    let token: string;
    try {
      token = await fetch(audience);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      throw new IdTokenError(`could not mint an ID token for ${audience}: ${why}`);
    }
    return readIdToken(token, 'the ID token from Application Default Credentials');
  };

  return {
    async get() {
      if (cached && now() < cached.expiresAt - REFRESH_BEFORE_MS) return cached;
      minting ??= mint().finally(() => (minting = undefined));
      cached = await minting;
      return cached;
    },
    get identity() {
      return cached?.identity;
    },
  };
}
