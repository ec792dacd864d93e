/** Every type in PROVIDER_TYPES can run: a functions-side factory, and for relay-backed types a relay backend too. */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { PROVIDER_TYPES, RELAY_TYPES } from '../../shared/config/schema.js';
import { createLogger } from '../../shared/logger.js';
import { FACTORIES } from '../../shared/providers/registry.js';
import { backendConfigSchema, loadRelayConfig, parseRelayConfig } from '../config.js';
import { createBackends } from './create-backends.js';

const root = resolve(import.meta.dirname, '..', '..');
/** One relay config per backend type the repository ships: the embedded default (as the stack loads it) and the kvm sample. */
const relayConfigs = [
  loadRelayConfig({}),
  parseRelayConfig(parseYaml(readFileSync(join(root, 'docs', 'samples', 'config', 'relay', 'kvm.yaml'), 'utf8'))),
];

describe('PROVIDER_TYPES: every type has what runs it', () => {
  it.each(PROVIDER_TYPES)('%s has a functions-side factory', (type) => {
    expect(FACTORIES[type], `no factory for ${type} in shared/providers/registry.ts`).toBeTypeOf('function');
  });

  it('the relay config accepts exactly the relay-backed types', () => {
    const accepted = backendConfigSchema.options.map((o) => o.shape.type.value);
    expect([...accepted].sort()).toEqual([...RELAY_TYPES].sort());
  });

  it.each(RELAY_TYPES)('%s has a relay backend', (type) => {
    const logger = createLogger({ level: 'ERROR', write: () => undefined });
    const built = relayConfigs.flatMap((config) => [...createBackends(config, { logger }).values()]);
    expect(built.map((b) => b.type)).toContain(type);
  });
});
