/** Proxy YAML documents: several per file, errors naming the document and field; every sample parses. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseConfig } from '../config/load.js';
import { LOCAL_DEFAULT_CONFIG } from '../config/local-default.js';
import { parseDocuments, parseProxyDocuments } from './documents.js';
import { spreadOf } from './pool.js';

describe('parseProxyDocuments', () => {
  it('reads several documents and defaults the action to apply', () => {
    const docs = parseProxyDocuments(
      'apiVersion: egress.dev/v1\nkind: Proxy\nmetadata: {name: a}\nspec: {provider: local}\n---\napiVersion: egress.dev/v1\nkind: Proxy\nmetadata: {name: b}\nspec: {provider: local, port: 8080}\n',
    );
    expect(docs.map((d) => [d.action, d.metadata.name, d.spec.port])).toEqual([
      ['apply', 'a', 0],
      ['apply', 'b', 8080],
    ]);
  });

  it('names the document and the field of an error', () => {
    expect(() =>
      parseProxyDocuments(
        'apiVersion: egress.dev/v1\nkind: Proxy\nmetadata: {name: a}\nspec: {provider: local}\n---\napiVersion: egress.dev/v1\nkind: Proxy\nmetadata: {name: B}\nspec: {provider: local}\n',
      ),
    ).toThrow(/documents\[1\]\.metadata\.name/);
    expect(() => parseProxyDocuments('a: [')).toThrow(/documents\[0\]: invalid YAML/);
  });

  it('every sample in docs/samples parses and names a provider the local config or a sample config defines', () => {
    const dir = join(process.cwd(), 'docs', 'samples');
    const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
    expect(files.length).toBeGreaterThan(0);
    // Sample configs (docs/samples/config/*.yaml) must themselves be valid configs.
    const configs = join(dir, 'config');
    const sampleConfigs = existsSync(configs) ? readdirSync(configs).filter((f) => f.endsWith('.yaml')) : [];
    const providers = new Set([
      ...LOCAL_DEFAULT_CONFIG.providers.map((p) => p.name),
      ...sampleConfigs.flatMap((f) =>
        parseConfig(parseYaml(readFileSync(join(configs, f), 'utf8'))).providers.map((p) => p.name),
      ),
    ]);
    for (const file of files) {
      for (const doc of parseDocuments(readFileSync(join(dir, file), 'utf8')))
        for (const p of doc.kind === 'ProxyPool' ? spreadOf(doc.spec).map((e) => e.provider) : [doc.spec.provider])
          expect(providers).toContain(p);
    }
  });
});
