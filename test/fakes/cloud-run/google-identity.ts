/**
 * Google's ID-token issuer, as the fakes need it: an RS256 key pair of its own that signs tokens
 * with the claims Google puts in a service account's ID token (`iss`, `aud`, `azp`, `email`,
 * `email_verified`, `sub`, `iat`, `exp`; https://cloud.google.com/docs/authentication/token-types#id),
 * and the verification Cloud Run's front end does with the public half.
 */
import { createSign, createVerify, generateKeyPairSync } from 'node:crypto';
import { z } from 'zod';

const ISSUER = 'https://accounts.google.com';

/** The claims checked and reported. */
const claimsSchema = z.looseObject({
  iss: z.string(),
  aud: z.string(),
  email: z.string(),
  sub: z.string(),
  iat: z.number(),
  exp: z.number(),
});
export type IdClaims = z.infer<typeof claimsSchema>;

export interface GoogleIdentity {
  /** @returns a signed JWT for `email` and `audience`, valid `lifetimeS` seconds from `nowMs` */
  mint(email: string, audience: string, nowMs: number, lifetimeS: number): string;
  /** @returns the claims of a token signed here, or why it is not one */
  verify(token: string, nowMs: number): IdClaims | { invalid: string };
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

export function createGoogleIdentity(): GoogleIdentity {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    mint(email, audience, nowMs, lifetimeS) {
      const iat = Math.floor(nowMs / 1000);
      const head = b64({ alg: 'RS256', kid: 'fake-google-key', typ: 'JWT' });
      const body = b64({
        iss: ISSUER,
        aud: audience,
        azp: '100000000000000000001',
        email,
        email_verified: true,
        sub: '100000000000000000001',
        iat,
        exp: iat + lifetimeS,
      });
      const signature = createSign('RSA-SHA256').update(`${head}.${body}`).sign(privateKey).toString('base64url');
      return `${head}.${body}.${signature}`;
    },
    verify(token, nowMs) {
      const [head, body, signature] = token.split('.');
      if (!head || !body || !signature) return { invalid: 'not a JWT' };
      const signed = createVerify('RSA-SHA256')
        .update(`${head}.${body}`)
        .verify(publicKey, Buffer.from(signature, 'base64url'));
      if (!signed) return { invalid: 'bad signature' };
      const parsed = claimsSchema.safeParse(JSON.parse(Buffer.from(body, 'base64url').toString('utf8')));
      if (!parsed.success) return { invalid: 'claims missing' };
      const claims = parsed.data;
      if (claims.iss !== ISSUER) return { invalid: `issuer ${claims.iss}` };
      if (claims.exp * 1000 <= nowMs) return { invalid: 'expired' };
      return claims;
    },
  };
}
