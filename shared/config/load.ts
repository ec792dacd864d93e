/** Loads the configuration once: a file named by EGRESS_CONFIG (YAML or JSON) or the embedded local default. */
import { z } from 'zod';
import { apiTokenSchema } from '../api/scopes.js';
import { ValidationError } from '../errors.js';
import { readConfigFile } from './config-file.js';
import { toValidationError } from '../domain/proxy.js';
import { unsafeJson } from '../domain/text.js';
import { configSchema, type Config } from './schema.js';
import { LOCAL_DEFAULT_CONFIG } from './local-default.js';
import { deepFreeze } from '../freeze.js';

type Env = Record<string, string | undefined>;

/**
 * Parses configuration. Environment overrides: `EGRESS_PROJECT` (or `GOOGLE_CLOUD_PROJECT`),
 * `EGRESS_INSTALLATION`, `EGRESS_ECHO_URL`, `EGRESS_API_TOKENS` (comma-separated `scope:token`
 * entries, shared/api/scopes.ts).
 *
 * @param env - the environment (tests pass their own)
 * @returns a deeply frozen Config
 * @throws ValidationError naming the config field (`config.providers.0.type`) or the variable (`EGRESS_API_TOKENS.1`)
 */
export function loadConfig(env: Env = process.env): Config {
  const raw = env['EGRESS_CONFIG'] ? readConfigFile(env['EGRESS_CONFIG']) : structuredClone(LOCAL_DEFAULT_CONFIG);
  return parseConfig(raw, env);
}

/** Validates a config object (already decoded) and applies the environment overrides. */
export function parseConfig(raw: unknown, env: Env = {}): Config {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ValidationError('config', 'must be an object');
  }
  const unsafe = unsafeJson(raw);
  if (unsafe) throw new ValidationError(`config.${unsafe.field}`, unsafe.reason);
  const merged: Record<string, unknown> = { ...raw };
  const project = env['EGRESS_PROJECT'] ?? env['GOOGLE_CLOUD_PROJECT'];
  if (project) merged['project'] = project;
  if (env['EGRESS_INSTALLATION']) merged['installationId'] = env['EGRESS_INSTALLATION'];
  if (env['EGRESS_ECHO_URL']) merged['echoUrl'] = env['EGRESS_ECHO_URL'];
  if (env['EGRESS_API_TOKENS']) {
    const entries = env['EGRESS_API_TOKENS']
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
    // Checked here too, so that a bad entry is named by the variable it came from.
    const tokens = z.array(apiTokenSchema).safeParse(entries);
    if (!tokens.success) throw toValidationError(tokens.error, 'EGRESS_API_TOKENS');
    merged['apiTokens'] = entries;
  }
  const parsed = configSchema.safeParse(merged);
  if (!parsed.success) throw toValidationError(parsed.error, 'config');
  return deepFreeze(parsed.data);
}
