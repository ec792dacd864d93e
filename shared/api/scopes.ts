/** API token scopes (docs/operations.md, "Tokens and scopes"): what each token may call, and the `scope:token` entries that grant them. */
import { z } from 'zod';

/**
 * The scopes, least first; each includes the ones before it (admin ⊃ read ⊃ discover):
 * - `discover`: discovery (proxy URLs with their credentials) and reports: what a gateway or a crawler needs;
 * - `read`: besides, the fleet as it stands (proxies, pools, providers, relays): the dashboard's view;
 * - `admin`: besides, apply and delete proxies and pools.
 */
export const API_SCOPES = ['discover', 'read', 'admin'] as const;
export const apiScopeSchema = z.enum(API_SCOPES);
export type ApiScope = z.infer<typeof apiScopeSchema>;

/** True when a token of scope `held` may call a route that needs `needed`. */
export function grants(held: ApiScope, needed: ApiScope): boolean {
  return API_SCOPES.indexOf(held) >= API_SCOPES.indexOf(needed);
}

/**
 * One accepted token, written `scope:token` (`discover:Xy…`), or a bare token, which is `admin`: so
 * were all tokens before scopes existed. A bare token cannot hold a `:`. The token itself never
 * appears in an error.
 */
export const apiTokenSchema = z.string().transform((entry, ctx) => {
  const colon = entry.indexOf(':');
  const scope = colon < 0 ? 'admin' : entry.slice(0, colon);
  const token = colon < 0 ? entry : entry.slice(colon + 1);
  const parsed = apiScopeSchema.safeParse(scope);
  if (!parsed.success) {
    ctx.addIssue({
      code: 'custom',
      message: `the part before ":" must be a scope (${API_SCOPES.join(', ')}); write scope:token, or a bare token (admin) without ":"`,
    });
    return z.NEVER;
  }
  if (token.length < 16) {
    ctx.addIssue({ code: 'custom', message: 'API tokens must be at least 16 characters' });
    return z.NEVER;
  }
  return { scope: parsed.data, token };
});
export type ApiToken = z.output<typeof apiTokenSchema>;

/**
 * The token of the least scope that still grants `needed`: the one to hand a program that needs
 * only that (the local stack's gateway gets the `discover` one).
 */
export function leastToken(tokens: readonly ApiToken[], needed: ApiScope): string | undefined {
  const granting = tokens.filter((t) => grants(t.scope, needed));
  return granting.sort((a, b) => API_SCOPES.indexOf(a.scope) - API_SCOPES.indexOf(b.scope))[0]?.token;
}
