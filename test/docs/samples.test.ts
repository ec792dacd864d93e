/** Every file under docs/samples/ is exercised: parsed with the schema its place says it follows. */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseRelayConfig } from '../../relay/config.js';
import { parseConfig } from '../../shared/config/load.js';
import { LOCAL_DEFAULT_CONFIG } from '../../shared/config/local-default.js';
import { parseDocuments } from '../../shared/domain/documents.js';
import { spreadOf } from '../../shared/domain/pool.js';

const root = resolve(import.meta.dirname, '..', '..');
const samples = join(root, 'docs', 'samples');

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((d) => (d.isDirectory() ? files(join(dir, d.name)) : [join(dir, d.name)]))
    .sort();
}

const all = files(samples).map((f) => relative(samples, f));
/** config/relay/*: relay configs; config/*: functions configs; the rest: Proxy and ProxyPool documents. */
const kind = (f: string) => (f.startsWith('config/relay/') ? 'relay' : f.startsWith('config/') ? 'config' : 'proxies');

describe('docs/samples', () => {
  it('holds only YAML files this test knows how to check', () => {
    expect(all.length).toBeGreaterThan(5);
    for (const f of all) expect(f, f).toMatch(/\.yaml$/);
  });

  const configs = all.filter((f) => kind(f) === 'config');
  it.each(configs)('%s is a valid functions config', (f) => {
    expect(parseConfig(parseYaml(readFileSync(join(samples, f), 'utf8'))).providers.length).toBeGreaterThan(0);
  });

  // What infra/terraform/functions.tf mounts in a function: provider_secret_files entries, each at
  // /etc/egress-secrets/<name>/value (and the config itself, which no provider option names).
  const mountedSecret = /^\/etc\/egress-secrets\/[a-z0-9][a-z0-9_-]*\/value$/;
  it.each(configs)('%s names only host paths a function has mounted', (f) => {
    const functionsTf = readFileSync(join(root, 'infra', 'terraform', 'functions.tf'), 'utf8');
    expect(functionsTf).toContain('mount_path = "/etc/egress-secrets/${secret_volumes.key}"');
    expect(functionsTf).toMatch(/path\s+= "value"/);
    const paths = (value: unknown): string[] =>
      typeof value === 'string'
        ? value.startsWith('/')
          ? [value]
          : []
        : typeof value === 'object' && value !== null
          ? Object.values(value).flatMap(paths)
          : [];
    for (const p of parseConfig(parseYaml(readFileSync(join(samples, f), 'utf8'))).providers)
      for (const path of paths(p.options)) expect(path, `${f}: ${p.name}`).toMatch(mountedSecret);
  });

  it.each(all.filter((f) => kind(f) === 'relay'))('%s is a valid relay config', (f) => {
    expect(parseRelayConfig(parseYaml(readFileSync(join(samples, f), 'utf8'))).backends.length).toBeGreaterThan(0);
  });

  it.each(all.filter((f) => kind(f) === 'proxies'))(
    '%s parses and names only providers a sample config or the local config defines',
    (f) => {
      const providers = new Set([
        ...LOCAL_DEFAULT_CONFIG.providers.map((p) => p.name),
        ...configs.flatMap((c) =>
          parseConfig(parseYaml(readFileSync(join(samples, c), 'utf8'))).providers.map((p) => p.name),
        ),
      ]);
      const docs = parseDocuments(readFileSync(join(samples, f), 'utf8'));
      expect(docs.length).toBeGreaterThan(0);
      for (const d of docs) {
        const named = d.kind === 'ProxyPool' ? spreadOf(d.spec).map((e) => e.provider) : [d.spec.provider];
        for (const p of named) expect(providers, `${f}: ${d.metadata.name}`).toContain(p);
      }
    },
  );
});
