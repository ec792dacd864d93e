/** Where the API is: EGRESS_API_URL/EGRESS_TOKEN (and how to pass Cloud Run IAM), else `local.env` from EGRESS_HOME or the nearest `.egress/`. */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { apiAuthSettings, type ApiAuthSettings } from '../shared/api/cloud-run-auth.js';

/** The API endpoint and bearer token the CLI talks to. */
export interface CliConfig {
  /** Base URL without a trailing slash; may carry a path (a Cloud Functions URL ends in `/api`). */
  apiUrl: string;
  /** Undefined when none is configured (the API then answers 401). */
  token: string | undefined;
  /**
   * A `discover`-scoped token (`EGRESS_DISCOVER_TOKEN`, which the local stack writes): what
   * `egress gateway` uses when there is one, since discovery and reports are all it calls.
   */
  discoverToken?: string | undefined;
  /** The `local.env` the values came from, if any (named in error messages). */
  source: string | undefined;
  /** Whether and how to send a Google ID token (EGRESS_API_AUTH…); absent: none. */
  apiAuth?: ApiAuthSettings;
}

/** No API URL anywhere: neither in the environment nor in a `local.env`. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/**
 * Parses `KEY=value` lines (blank lines, `#` comments, `export ` prefixes and quotes allowed).
 *
 * @returns the variables, later lines winning
 */
export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim().replace(/^export\s+/, '');
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    let value = line.slice(eq + 1).trim();
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.at(-1) === value[0])
      value = value.slice(1, -1);
    out[line.slice(0, eq).trim()] = value;
  }
  return out;
}

/**
 * The `local.env` to read: `$EGRESS_HOME/local.env` when EGRESS_HOME is set, else the first
 * `.egress/local.env` in `cwd` or one of its parents (like kubectl looking for its config).
 *
 * @returns its path, or undefined when there is none
 */
export function findLocalEnv(env: NodeJS.ProcessEnv, cwd: string): string | undefined {
  const home = env['EGRESS_HOME'];
  if (home) {
    const file = resolve(cwd, home, 'local.env');
    return existsSync(file) ? file : undefined;
  }
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    const file = join(dir, '.egress', 'local.env');
    if (existsSync(file)) return file;
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * Resolves the API endpoint once, at start-up. Variables set in the environment win over the file.
 *
 * @param env - the process environment (tests pass their own)
 * @param cwd - where to start looking for `.egress/local.env`
 * @throws ConfigError when no API URL is configured anywhere
 */
export function loadCliConfig(env: NodeJS.ProcessEnv, cwd: string): CliConfig {
  let url = env['EGRESS_API_URL'] || undefined;
  let token = env['EGRESS_TOKEN'] || undefined;
  let source: string | undefined;
  let file: Record<string, string> = {};
  if (!url || !token) {
    source = findLocalEnv(env, cwd);
    file = source ? parseEnvFile(readFileSync(source, 'utf8')) : {};
    url ??= file['EGRESS_API_URL'] || undefined;
    token ??= file['EGRESS_TOKEN'] || undefined;
  }
  if (!url) {
    const where = source
      ? `${source} has no EGRESS_API_URL (is the stack's API running?)`
      : env['EGRESS_HOME']
        ? `there is no local.env in EGRESS_HOME (${env['EGRESS_HOME']})`
        : 'no .egress/local.env in this directory or a parent';
    throw new ConfigError(
      `no API configured: set EGRESS_API_URL and EGRESS_TOKEN, or start the local stack (npm start); ${where}`,
    );
  }
  if (!/^https?:\/\//.test(url) || !URL.canParse(url))
    throw new ConfigError(`EGRESS_API_URL must be an http(s) URL (got "${url}")`);
  const setting = (name: 'EGRESS_API_AUTH' | 'EGRESS_API_AUDIENCE' | 'EGRESS_ID_TOKEN' | 'EGRESS_DISCOVER_TOKEN') =>
    env[name] || file[name] || undefined;
  const apiAuth = apiAuthSettings(url, {
    EGRESS_API_AUTH: setting('EGRESS_API_AUTH'),
    EGRESS_API_AUDIENCE: setting('EGRESS_API_AUDIENCE'),
    EGRESS_ID_TOKEN: setting('EGRESS_ID_TOKEN'),
  });
  const discoverToken = setting('EGRESS_DISCOVER_TOKEN');
  return { apiUrl: url.replace(/\/+$/, ''), token, source, apiAuth, ...(discoverToken && { discoverToken }) };
}
