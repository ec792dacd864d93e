/** infra/terraform: rendered from the topology and current, parsed by HashiCorp's HCL parser, references resolved, fmt layout. */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { format } from '@cdktn/hcl-tools';
import { parse } from '@cdktn/hcl2json';
import { build } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { parseConfig } from '../../shared/config/load.js';
import { COLLECTIONS } from '../../shared/store/firestore/client.js';
import { parseRelayConfig } from '../../relay/config.js';
import { findTopologyFile, loadTopology } from '../local/topology.js';
import { readTerraformDir, unresolvedReferences, type TerraformDir } from './hcl-files.js';
import { CRON_BY_SECONDS, RENDERED_FILE, renderTopology, renderTopologyFile } from './render.js';

const root = dirname(dirname(findTopologyFile()));
const dir = join(root, 'infra', 'terraform');
const topology = loadTopology();
let tf: TerraformDir;

/** The parts of functions.tf's locals the tests read (hcl2json gives literal objects as JSON). */
const functionLocals = () =>
  z
    .tuple([
      z.looseObject({
        function_publishes: z.record(z.string(), z.array(z.string())),
        provider_functions: z.string(),
      }),
    ])
    .parse(tf.files.get('functions.tf')?.['locals'])[0];
const variableBlocks = z.record(z.string(), z.tuple([z.record(z.string(), z.unknown())]));

beforeAll(async () => {
  tf = await readTerraformDir(dir);
}, 30_000);

describe('topology.auto.tf.json', () => {
  it('is what `npm run terraform:render` makes of infra/topology.yaml now', () => {
    expect(readFileSync(join(root, RENDERED_FILE), 'utf8')).toBe(renderTopologyFile(topology));
  });

  it('changes when the topology does (so a stale file is caught)', () => {
    const edited = structuredClone(topology);
    edited.topics.push('extra-topic');
    expect(renderTopologyFile(edited)).not.toBe(renderTopologyFile(topology));
    expect(renderTopology(edited)).toMatchObject({
      resource: { google_pubsub_topic: { extra_topic: { name: 'extra-topic' } } },
    });
  });

  it('is the only place a topic, subscription or scheduler job is declared', () => {
    const declared = [...tf.resources.keys()].filter((k) =>
      /^google_(pubsub_topic|pubsub_subscription|cloud_scheduler_job)\./.test(k),
    );
    const rendered = z
      .object({ resource: z.record(z.string(), z.record(z.string(), z.unknown())) })
      .parse(JSON.parse(readFileSync(join(root, RENDERED_FILE), 'utf8')));
    const fromRendered = Object.entries(rendered.resource)
      .filter(([type]) => /^google_(pubsub_topic|pubsub_subscription|cloud_scheduler_job)$/.test(type))
      .flatMap(([type, named]) => Object.keys(named).map((n) => `${type}.${n}`));
    expect(declared.sort()).toEqual(fromRendered.sort());
    // And no .tf file names a topology topic or subscription in a string of its own.
    const names = [...topology.topics, ...topology.subscriptions.map((s) => s.name)];
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.tf'))) {
      const text = readFileSync(join(dir, file), 'utf8').replace(/^\s*#.*$/gm, '');
      for (const name of names) {
        if (['proxy-checks', 'relay-commands', 'proxy-requests'].includes(name) && file === 'functions.tf') continue;
        expect(text, `${file} names ${name}`).not.toMatch(new RegExp(`"${name}"`));
      }
    }
  });

  it('maps every interval a cron expression can keep exactly', () => {
    expect(CRON_BY_SECONDS['60']).toBe('* * * * *');
    expect(CRON_BY_SECONDS['300']).toBe('*/5 * * * *');
    expect(CRON_BY_SECONDS['7200']).toBe('0 */2 * * *');
    expect(CRON_BY_SECONDS['420']).toBeUndefined(); // 7 minutes do not divide an hour
    for (const [seconds, cron] of Object.entries(CRON_BY_SECONDS)) {
      const [minute = '', hour = ''] = cron.split(' ');
      const period = minute.startsWith('*/')
        ? Number(minute.slice(2)) * 60
        : minute === '*'
          ? 60
          : hour.startsWith('*/')
            ? Number(hour.slice(2)) * 3600
            : hour === '*'
              ? 3600
              : 86400;
      expect(period, cron).toBe(Number(seconds));
    }
  });
});

describe('the .tf files', () => {
  it('parse with HashiCorp’s HCL parser and declare the whole deployment', () => {
    expect([...tf.files.keys()]).toContain('functions.tf');
    for (const resource of [
      'google_cloudfunctions2_function.fn',
      'google_firestore_database.default',
      'google_firestore_index.proxies_provider_phase',
      'google_firestore_field.events_ttl',
      'google_firestore_field.rejections_ttl',
      'google_service_account.fn',
      'google_service_account.relay',
      'google_pubsub_subscription_iam_member.relay_pull',
      'google_pubsub_topic_iam_member.relay_report',
      'google_secret_manager_secret.config',
      'google_compute_firewall.proxy',
      'google_vpc_access_connector.functions',
    ]) {
      expect(tf.resources.has(resource), resource).toBe(true);
    }
  });

  it('refer only to declared variables, locals, resources and data sources, and use every variable', async () => {
    expect(await unresolvedReferences(tf)).toEqual([]);
  }, 30_000);

  it('catch a reference to something undeclared', async () => {
    const broken: TerraformDir = { ...tf, files: new Map(tf.files) };
    broken.files.set('broken.tf', await parse('broken.tf', 'output "x" {\n  value = var.projcet\n}\n'));
    expect(await unresolvedReferences(broken)).toContain('broken.tf: var.projcet is not declared');
  }, 30_000);

  it('are laid out as `terraform fmt` lays them out (hclwrite.Format, compiled to WebAssembly)', async () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.tf') || f.endsWith('.tfvars.example'));
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      const text = readFileSync(join(dir, file), 'utf8');
      expect(await format(text), file).toBe(text);
    }
    // And the check can fail: a misaligned attribute is re-laid.
    expect(await format('a {\nx = 1\nlong = 2\n}\n')).toBe('a {\n  x    = 1\n  long = 2\n}\n');
  }, 30_000);

  it('give the relay only its own subscription to pull and the reports topic to publish to', () => {
    const pull = tf.resources.get('google_pubsub_subscription_iam_member.relay_pull');
    const report = tf.resources.get('google_pubsub_topic_iam_member.relay_report');
    expect(pull).toMatchObject({
      role: 'roles/pubsub.subscriber',
      subscription: '${google_pubsub_subscription.relay_commands[each.key].name}',
    });
    expect(report).toMatchObject({
      role: 'roles/pubsub.publisher',
      topic: '${google_pubsub_topic.relay_reports.name}',
    });
    const relayGrants = [...tf.resources.entries()].filter(([, body]) =>
      JSON.stringify(body).includes('google_service_account.relay['),
    );
    expect(relayGrants.map(([k]) => k).sort()).toEqual([
      'google_pubsub_subscription_iam_member.relay_pull',
      'google_pubsub_topic_iam_member.relay_report',
    ]);
  });

  it('expire events, rejections and ban budgets on the field the store writes (test/integration/retention.test.ts)', () => {
    expect(tf.resources.get('google_firestore_field.events_ttl')).toMatchObject({
      collection: 'events',
      field: 'expireAt',
    });
    expect(tf.resources.get('google_firestore_field.rejections_ttl')).toMatchObject({
      collection: COLLECTIONS.rejections,
      field: 'expireAt',
    });
    expect(tf.resources.get('google_firestore_field.ban_budgets_ttl')).toMatchObject({
      collection: COLLECTIONS.banBudgets,
      field: 'expireAt',
    });
    expect(tf.resources.get('google_firestore_field.ban_budgets_ttl')).toHaveProperty('ttl_config');
  });

  it('let each function publish only to topology topics its own code names', async () => {
    const publishes = functionLocals().function_publishes;
    expect(Object.keys(publishes).sort()).toEqual(Object.keys(topology.functions).sort());
    for (const [fn, topics] of Object.entries(publishes)) {
      const bundle = await build({
        entryPoints: [join(root, 'functions', fn, 'index.ts')],
        bundle: true,
        platform: 'node',
        format: 'esm',
        packages: 'external',
        write: false,
        logLevel: 'silent',
      });
      const code = bundle.outputFiles[0]?.text ?? '';
      for (const topic of topics) {
        expect(topology.topics, `${fn} → ${topic}`).toContain(topic);
        expect(code.includes(`"${topic}"`) || code.includes(`'${topic}'`), `${fn}'s code names ${topic}`).toBe(true);
      }
    }
  }, 30_000);

  it('mount the provider secrets and the VPC connector only where providers are called (callsProviders)', () => {
    expect(functionLocals().provider_functions).toBe(
      '${toset([for name, f in local.functions : name if f.calls_providers])}',
    );
    const rendered = z
      .object({
        locals: z.object({ topology_functions: z.record(z.string(), z.object({ calls_providers: z.boolean() })) }),
      })
      .parse(renderTopology(topology)).locals.topology_functions;
    for (const [name, f] of Object.entries(topology.functions))
      expect(rendered[name]?.calls_providers, name).toBe(f.callsProviders);
  });
});

describe('terraform.tfvars.example', () => {
  it('sets only declared variables, every required one, and names a valid config', async () => {
    const vars = await parse('terraform.tfvars', readFileSync(join(dir, 'terraform.tfvars.example'), 'utf8'));
    for (const key of Object.keys(vars)) expect(tf.variables.has(key), key).toBe(true);
    const required = [...tf.files.values()].flatMap((body) =>
      Object.entries(variableBlocks.parse(body['variable'] ?? {})).flatMap(([name, [v]]) =>
        'default' in v ? [] : [name],
      ),
    );
    expect(required.sort()).toEqual(['config_file', 'installation_id', 'project', 'proxy_source_ranges']);
    for (const name of required) expect(vars, name).toHaveProperty(name);
    const config = parseConfig(parseYaml(readFileSync(join(dir, String(vars['config_file'])), 'utf8')));
    expect(config.installationId).toBe(vars['installation_id']);
    expect(config.project).toBe(vars['project']);
  });

  it('matches the relay sample: same installation, and the relay runs the providers that name it', () => {
    const config = parseConfig(
      parseYaml(readFileSync(join(root, 'docs', 'samples', 'config', 'production.yaml'), 'utf8')),
    );
    const relay = parseRelayConfig(parseYaml(readFileSync(join(root, 'infra', 'relay', 'config.yaml'), 'utf8')));
    expect(relay.installationId).toBe(config.installationId);
    expect(relay.project).toBe(config.project);
    expect(relay.subscription).toBe(`${topology.relaySubscription.namePrefix}${relay.relay}`);
    const named = config.providers.filter((p) => p.relay === relay.relay).map((p) => p.name);
    expect(relay.backends.map((b) => b.provider).sort()).toEqual(named.sort());
  });
});

describe('the API tokens', () => {
  it('are an admin and a discover token, scoped in EGRESS_API_TOKENS, and output as sensitive', () => {
    const data = String(tf.resources.get('google_secret_manager_secret_version.api_tokens')?.['secret_data']);
    // Each generated entry "scope:${random_password.X.result}", with a stand-in for the generated value.
    const generated = [...data.matchAll(/"(\w+):\$\{random_password\.(\w+)\.result\}"/g)].map((m) => ({
      scope: m[1] ?? '',
      resource: m[2] ?? '',
    }));
    const value = (resource: string) => `${resource.replaceAll('_', '-')}-${'x'.repeat(24)}`;
    const entries = generated.map((g) => `${g.scope}:${value(g.resource)}`).join(',');
    const config = parseConfig(
      { installationId: 'tf', echoUrl: 'http://127.0.0.1:1/', providers: [] },
      { EGRESS_API_TOKENS: entries },
    );
    expect(config.apiTokens).toEqual([
      { scope: 'admin', token: value('api_token') },
      { scope: 'discover', token: value('api_discover_token') },
    ]);
    const outputs = z
      .record(z.string(), z.tuple([z.looseObject({ value: z.string(), sensitive: z.boolean().optional() })]))
      .parse(tf.files.get('outputs.tf')?.['output']);
    for (const [output, resource] of [
      ['api_token', 'api_token'],
      ['api_discover_token', 'api_discover_token'],
    ] as const)
      expect(outputs[output]?.[0], output).toMatchObject({
        value: `\${random_password.${resource}.result}`,
        sensitive: true,
      });
  });
});
