/**
 * Bad config files: seeded damage to the functions' config (`EGRESS_CONFIG`) and the relay's
 * (`EGRESS_RELAY_CONFIG`), written as JSON or YAML files and loaded as the processes load them.
 * Each fails with a ValidationError naming the field; none crashes with anything else or loads.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { loadRelayConfig, LOCAL_RELAY_CONFIG } from '../../relay/config.js';
import { loadConfig } from '../../shared/config/load.js';
import { LOCAL_DEFAULT_CONFIG } from '../../shared/config/local-default.js';
import { ValidationError } from '../../shared/errors.js';
import { Figures } from './support/figures.js';
import { badInputs, DNS_LABEL, namesField, type FieldSpec } from './support/fuzz-inputs.js';
import { mulberry32, replayHint, scenarioCount, suiteSeed, type Rng } from './support/prng.js';

const FILE = 'test/guarantees/fuzz-config.test.ts';
const SEED = suiteSeed(0x0f022004);
const COUNT = scenarioCount(300, 3000);
const figures = new Figures('fuzz-config', SEED);
const dir = mkdtempSync(join(tmpdir(), 'fuzz-config-'));
let files = 0;

const FUNCTIONS: FieldSpec[] = [
  { path: 'project', type: 'string', optional: true },
  { path: 'installationId', type: 'string', name: true, max: 63, valid: DNS_LABEL },
  { path: 'echoUrl', type: 'string' },
  { path: 'checkIntervalSeconds', type: 'number', optional: true },
  { path: 'gcGraceSeconds', type: 'number', optional: true },
  { path: 'unhealthyAfter', type: 'number', bounded: true, optional: true },
  { path: 'maxEvents', type: 'number', bounded: true, optional: true },
  { path: 'providers', type: 'array' },
  { path: 'providers.0.name', type: 'string', name: true, max: 63, valid: DNS_LABEL },
  { path: 'providers.0.type', type: 'string', max: 16 },
  { path: 'providers.0.relay', type: 'string', name: true, max: 63, valid: DNS_LABEL },
  { path: 'providers.0.catalogue', type: 'object', optional: true, keyedBy: { max: 63, value: {}, valid: DNS_LABEL } },
  { path: 'providers.0.options', type: 'object', optional: true },
  { path: 'providers.0.rolloutBudget', type: 'number', bounded: true, optional: true },
];
const RELAY: FieldSpec[] = [
  { path: 'relay', type: 'string', name: true, max: 63, valid: DNS_LABEL },
  { path: 'project', type: 'string' },
  { path: 'subscription', type: 'string' },
  { path: 'echoUrl', type: 'string' },
  { path: 'probeIntervalSeconds', type: 'number' },
  { path: 'installationId', type: 'string', name: true, max: 63, valid: DNS_LABEL },
  { path: 'backends', type: 'array' },
  { path: 'backends.0.provider', type: 'string', name: true, max: 63, valid: DNS_LABEL },
  { path: 'backends.0.type', type: 'string', max: 16 },
  { path: 'backends.0.stateDir', type: 'string' },
  { path: 'backends.0.bindAddresses', type: 'array' },
  { path: 'backends.0.portRange', type: 'array' },
  { path: 'backends.0.egress.deny.0', type: 'string', max: 64, valid: /^[0-9a-f:.]+\/\d{1,3}$/ },
  { path: 'backends.0.egress.ports.0', type: 'number', bounded: true },
  { path: 'backends.0.egress.allow.0.cidr', type: 'string', max: 64, valid: /^[0-9a-f:.]+\/\d{1,3}$/ },
];
/** The embedded relay config with an egress policy on its first backend, so its fields can be damaged too. */
const RELAY_BASE = {
  ...LOCAL_RELAY_CONFIG,
  backends: LOCAL_RELAY_CONFIG.backends.map((b, i) =>
    i === 0
      ? { ...b, egress: { deny: ['10.0.0.0/8', 'fc00::/7'], ports: [80, 443], allow: [{ cidr: '127.0.0.0/8' }] } }
      : b,
  ),
};

/** Writes a config text as the operator would: JSON as is, or the same object as YAML. */
function writeConfig(rng: Rng, text: string, truncated: boolean): string {
  let body = text;
  if (!truncated && rng.chance(0.5)) {
    body = toYaml(JSON.parse(text) as unknown);
    figures.add('yamlFiles');
  }
  const file = join(dir, `config-${++files}.${body === text ? 'json' : 'yaml'}`);
  writeFileSync(file, body);
  return file;
}

/** The ValidationError `load` throws, or what went wrong instead. */
function failure(load: () => unknown): { field?: string; message: string; other?: string } {
  try {
    load();
    return { message: '', other: 'loaded' };
  } catch (err) {
    if (err instanceof ValidationError) return { field: err.field, message: err.message };
    return { message: '', other: `threw ${String(err)}` };
  }
}

afterAll(() => {
  figures.report();
  rmSync(dir, { recursive: true, force: true });
});

describe('guarantee: bad config files', () => {
  it.each([
    ['functions', FUNCTIONS, LOCAL_DEFAULT_CONFIG, ['', 'providers.0'], 'config', 'EGRESS_CONFIG', loadConfig],
    ['relay', RELAY, RELAY_BASE, ['', 'backends.0'], 'relay', 'EGRESS_RELAY_CONFIG', loadRelayConfig],
  ] as const)(
    `${COUNT} seeded bad %s config files each fail naming the field`,
    (surface, fields, valid, objects, prefix, variable, load) => {
      const rng = mulberry32(SEED + (surface === 'relay' ? 1 : 0));
      const failures: string[] = [];
      for (const c of badInputs(rng, valid, [...fields], [...objects], COUNT)) {
        const file = writeConfig(rng, c.text, c.class === 'truncated');
        const got = failure(() => load({ [variable]: file }));
        figures.add(`${surface}.class.${c.class}`);
        figures.add('inputs');
        // Cut text is often still YAML: then what is missing is named, under the prefix.
        const whole: string[] = [prefix, variable];
        const named =
          c.class === 'truncated'
            ? got.field !== undefined && (whole.includes(got.field) || got.field.startsWith(`${prefix}.`))
            : namesField(got.field, c.field === '' ? '' : `${prefix}.${c.field}`, whole);
        if (got.other || !named)
          failures.push(
            `${surface} ${c.class} ${c.label}: ${got.other ?? `field ${JSON.stringify(got.field)}`} (${got.message.slice(0, 100)})`,
          );
        else figures.add('rejectedNamingField');
      }
      expect(failures, [...failures.slice(0, 10), replayHint(FILE, SEED, COUNT)].join('\n')).toEqual([]);
    },
  );

  const aliases = [
    'a: &a [x, x, x, x, x, x, x, x, x]',
    ...Array.from(
      { length: 8 },
      (_, i) =>
        `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [*${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}]`,
    ),
  ].join('\n');
  it.each([
    ['a YAML alias bomb (billion laughs)', aliases, 'EGRESS_CONFIG'],
    ['a file that is a directory', null, 'EGRESS_CONFIG'],
    ['an empty file', '', 'config'],
    ['a YAML document that is a list', '- a\n- b\n', 'config'],
    ['two YAML documents', 'installationId: a\n---\ninstallationId: b\n', 'EGRESS_CONFIG'],
    ['a tag YAML does not know', 'installationId: !!js/function "function () {}"\n', 'config.installationId'],
    [
      'an interval as text',
      `${toYaml({ ...LOCAL_DEFAULT_CONFIG, checkIntervalSeconds: '60' })}`,
      'config.checkIntervalSeconds',
    ],
    [
      'a process provider with no relay',
      toYaml({ ...LOCAL_DEFAULT_CONFIG, providers: [{ name: 'p', type: 'process' }] }),
      'config.providers.0.relay',
    ],
    [
      'two providers with one name',
      toYaml({
        ...LOCAL_DEFAULT_CONFIG,
        providers: [...LOCAL_DEFAULT_CONFIG.providers, ...LOCAL_DEFAULT_CONFIG.providers],
      }),
      'config.providers',
    ],
  ])('%s fails naming the field', (_what, text, field) => {
    const file = text === null ? dir : join(dir, `hand-${++files}.yaml`);
    if (text !== null) writeFileSync(file, text);
    const got = failure(() => loadConfig({ EGRESS_CONFIG: file }));
    figures.add('handPicked');
    figures.add('inputs');
    expect(got.other).toBeUndefined();
    expect(got.field, got.message).toBe(field);
  });

  it('an API token from the environment that is too short is named', () => {
    const got = failure(() => loadConfig({ EGRESS_API_TOKENS: 'long-enough-token-0123456789, short' }));
    figures.add('handPicked');
    figures.add('inputs');
    expect(got.field).toBe('EGRESS_API_TOKENS.1');
    // The error names the token's place, never the token.
    expect(got.message).not.toContain('short');
  });
});
