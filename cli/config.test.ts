/** Finding the API: environment first, then local.env in EGRESS_HOME or the nearest `.egress/` upwards. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, findLocalEnv, loadCliConfig, parseEnvFile } from './config.js';

/** A project tree: `<root>/.egress/local.env` and a nested working directory. */
function tree(localEnv?: string) {
  const root = mkdtempSync(join(tmpdir(), 'egress-cli-config-'));
  const nested = join(root, 'a', 'b');
  mkdirSync(nested, { recursive: true });
  if (localEnv !== undefined) {
    mkdirSync(join(root, '.egress'));
    writeFileSync(join(root, '.egress', 'local.env'), localEnv);
  }
  return { root, nested };
}

describe('parseEnvFile', () => {
  it('reads KEY=value lines, ignoring comments and blanks, unquoting values', () => {
    expect(
      parseEnvFile(
        '# written by npm start\nGOOGLE_CLOUD_PROJECT=demo-egress\n\nexport EGRESS_TOKEN="t=1"\nEGRESS_API_URL=http://127.0.0.1:8095\nnonsense\n',
      ),
    ).toEqual({ GOOGLE_CLOUD_PROJECT: 'demo-egress', EGRESS_TOKEN: 't=1', EGRESS_API_URL: 'http://127.0.0.1:8095' });
  });
});

describe('loadCliConfig', () => {
  it('prefers EGRESS_API_URL and EGRESS_TOKEN from the environment, without a trailing slash', () => {
    const { nested } = tree('EGRESS_API_URL=http://file\nEGRESS_TOKEN=file\n');
    expect(loadCliConfig({ EGRESS_API_URL: 'https://api.example/api/', EGRESS_TOKEN: 'env' }, nested)).toEqual({
      apiUrl: 'https://api.example/api',
      token: 'env',
      source: undefined,
      apiAuth: {
        mode: 'none',
        reason: 'EGRESS_API_AUTH=auto and api.example is not a Cloud Run host',
        audience: 'https://api.example',
        idToken: undefined,
      },
    });
  });

  it('finds .egress/local.env in the current directory or a parent', () => {
    const { root, nested } = tree('EGRESS_API_URL=http://127.0.0.1:8095\nEGRESS_TOKEN=abc\n');
    const file = join(root, '.egress', 'local.env');
    expect(findLocalEnv({}, nested)).toBe(file);
    expect(findLocalEnv({}, root)).toBe(file);
    expect(loadCliConfig({}, nested)).toMatchObject({ apiUrl: 'http://127.0.0.1:8095', token: 'abc', source: file });
  });

  it('fills only what the environment lacks from the file', () => {
    const { nested } = tree('EGRESS_API_URL=http://127.0.0.1:8095\nEGRESS_TOKEN=abc\n');
    expect(loadCliConfig({ EGRESS_TOKEN: 'mine' }, nested)).toMatchObject({
      apiUrl: 'http://127.0.0.1:8095',
      token: 'mine',
    });
  });

  it("reads the local stack's discover token, which egress gateway uses in place of the admin one", () => {
    const { nested } = tree('EGRESS_API_URL=http://127.0.0.1:8095\nEGRESS_TOKEN=abc\nEGRESS_DISCOVER_TOKEN=d1s\n');
    expect(loadCliConfig({}, nested)).toMatchObject({ token: 'abc', discoverToken: 'd1s' });
    expect(loadCliConfig({ EGRESS_DISCOVER_TOKEN: 'mine' }, nested)).toMatchObject({ discoverToken: 'mine' });
    expect(
      loadCliConfig({ EGRESS_API_URL: 'http://x.example', EGRESS_TOKEN: 't' }, nested).discoverToken,
    ).toBeUndefined();
  });

  it('reads EGRESS_HOME/local.env when EGRESS_HOME is set, and nothing else', () => {
    const { nested } = tree('EGRESS_API_URL=http://from-tree\n');
    const home = mkdtempSync(join(tmpdir(), 'egress-cli-home-'));
    writeFileSync(join(home, 'local.env'), 'EGRESS_API_URL=http://from-home:1\nEGRESS_TOKEN=h\n');
    expect(loadCliConfig({ EGRESS_HOME: home }, nested)).toMatchObject({ apiUrl: 'http://from-home:1', token: 'h' });
    const empty = mkdtempSync(join(tmpdir(), 'egress-cli-home-'));
    expect(findLocalEnv({ EGRESS_HOME: empty }, nested)).toBeUndefined();
    expect(() => loadCliConfig({ EGRESS_HOME: empty }, nested)).toThrow(/no local.env in EGRESS_HOME/);
  });

  it('explains what to do when nothing is configured', () => {
    const { nested } = tree();
    expect(() => loadCliConfig({}, nested)).toThrow(ConfigError);
    expect(() => loadCliConfig({}, nested)).toThrow(/set EGRESS_API_URL and EGRESS_TOKEN, or start the local stack/);
  });

  it('names a local.env written before the API existed', () => {
    const { nested } = tree('GOOGLE_CLOUD_PROJECT=demo-egress\n');
    expect(() => loadCliConfig({}, nested)).toThrow(/local\.env has no EGRESS_API_URL/);
  });

  it('sends an ID token to a Cloud Run URL; EGRESS_API_AUTH, EGRESS_API_AUDIENCE and EGRESS_ID_TOKEN from the environment or the file', () => {
    const run = 'https://egress-api-abc123-uc.a.run.app';
    expect(loadCliConfig({ EGRESS_API_URL: run, EGRESS_TOKEN: 't' }, '/').apiAuth).toMatchObject({
      mode: 'google',
      audience: run,
    });
    const { nested } = tree(`EGRESS_API_URL=https://api.example\nEGRESS_API_AUTH=google\nEGRESS_API_AUDIENCE=${run}\n`);
    expect(loadCliConfig({ EGRESS_ID_TOKEN: 'x.y.z' }, nested).apiAuth).toEqual({
      mode: 'google',
      reason: 'EGRESS_API_AUTH=google',
      audience: run,
      idToken: 'x.y.z',
    });
    expect(() => loadCliConfig({ EGRESS_API_URL: run, EGRESS_TOKEN: 't', EGRESS_API_AUTH: 'yes' }, '/')).toThrow(
      /^EGRESS_API_AUTH: must be auto, google, none/,
    );
  });

  it('rejects a URL that is not http(s)', () => {
    expect(() => loadCliConfig({ EGRESS_API_URL: 'localhost:8095', EGRESS_TOKEN: 't' }, '/')).toThrow(
      /must be an http\(s\) URL/,
    );
  });
});
