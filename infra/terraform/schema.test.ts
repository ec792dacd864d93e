/**
 * infra/terraform against the providers' published schemas (schema-check.ts) and in the order a fresh
 * project needs (api-graph.ts): what `terraform validate` and a first apply would find, offline.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { findTopologyFile } from '../local/topology.js';
import { apiOf, apiOrderProblems } from './api-graph.js';
import { readTerraformDir, type TerraformDir } from './hcl-files.js';
import { providerOf } from './provider-schema.js';
import { schemaProblems } from './schema-check.js';

const dir = join(dirname(dirname(findTopologyFile())), 'infra', 'terraform');
let tf: TerraformDir;

beforeAll(async () => {
  tf = await readTerraformDir(dir);
}, 30_000);

/** A directory of its own holding `files`, read as infra/terraform is. */
async function snippet(files: Record<string, string>): Promise<TerraformDir> {
  const at = mkdtempSync(join(tmpdir(), 'tf-schema-'));
  try {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(at, name), text);
    return await readTerraformDir(at);
  } finally {
    rmSync(at, { recursive: true });
  }
}

describe('terraform schema: every resource, data source and argument is in its provider’s schema', () => {
  it('infra/terraform (hand-written and rendered) has no unknown, misspelt or missing argument or block', () => {
    expect(tf.files.has('topology.auto.tf.json')).toBe(true);
    expect(schemaProblems(tf)).toEqual([]);
  }, 60_000);

  it('names the file and path of each problem', async () => {
    const broken = await snippet({
      'functions.tf': [
        'resource "google_cloudfunctions2_function" "fn" {',
        '  location = "europe-west1"',
        '  service_config {',
        '    vpc_conector = "x"',
        '    dynamic "secret_volume" {',
        '      for_each = []',
        '      content {}',
        '    }',
        '  }',
        '  service_config {}',
        '}',
        'resource "google_pubsub_topik" "t" {}',
        'data "archive_file" "a" {',
        '  type = "zip"',
        '}',
        'resource "random_password" "p" {',
        '  length = 4',
        '  specail = false',
        '}',
        'resource "google_firestore_field" "f" {',
        '  collection = "c"',
        '  field = "x"',
        '  ttl_config {}',
        '  index_config {',
        '    indexes {',
        '      order = "ASCENDING"',
        '      query_scop = "COLLECTION"',
        '    }',
        '  }',
        '}',
      ].join('\n'),
      'topology.auto.tf.json': JSON.stringify({
        resource: { google_pubsub_subscription: { s: { name: 's', expiration_policy: { tll: '' } } } },
      }),
    });
    expect(schemaProblems(broken).sort()).toEqual(
      [
        'functions.tf: google_cloudfunctions2_function.fn.name: missing required argument',
        'functions.tf: google_cloudfunctions2_function.fn.service_config: at most one block is allowed',
        'functions.tf: google_cloudfunctions2_function.fn.service_config.vpc_conector: unknown argument',
        'functions.tf: google_cloudfunctions2_function.fn.service_config.dynamic.secret_volume: unknown block',
        'functions.tf: google_pubsub_topik.t: unknown resource type of hashicorp/google 6.50.0',
        'functions.tf: data.archive_file.a.output_path: missing required argument',
        'functions.tf: random_password.p.specail: unknown argument',
        'functions.tf: google_firestore_field.f.index_config.indexes.query_scop: unknown argument',
        'topology.auto.tf.json: google_pubsub_subscription.s.topic: missing required argument',
        'topology.auto.tf.json: google_pubsub_subscription.s.expiration_policy.tll: unknown argument',
        'topology.auto.tf.json: google_pubsub_subscription.s.expiration_policy.ttl: missing required argument',
      ].sort(),
    );
  }, 60_000);
});

const versionsSchema = z.object({
  terraform: z.tuple([
    z.looseObject({
      required_providers: z.tuple([z.record(z.string(), z.object({ source: z.string(), version: z.string() }))]),
    }),
  ]),
});

describe('terraform schema: versions.tf accepts only the provider versions checked here', () => {
  it('pins each provider to the patch releases of the version its schema package was made from', () => {
    const versions = versionsSchema.parse(tf.files.get('versions.tf'));
    const required = versions.terraform[0].required_providers[0];
    expect(Object.keys(required).sort()).toEqual(['archive', 'google', 'random']);
    for (const [name, { source, version }] of Object.entries(required)) {
      const pkg = providerOf(`${name}_x`);
      expect(pkg?.source, name).toBe(source);
      // `~> X.Y.Z` allows X.Y.Z up to, not including, X.(Y+1).0: the same arguments and resources.
      expect(version, `${name}: checked against ${pkg?.npm} (${pkg?.version})`).toBe(`~> ${pkg?.version}`);
    }
  });
});

describe('terraform graph: on a fresh project every API is enabled before it is called', () => {
  it('every resource and data source that calls an API depends on the google_project_service enabling it', async () => {
    expect(await apiOrderProblems(tf)).toEqual([]);
  }, 60_000);

  it('maps every type infra/terraform uses to its API', () => {
    const types = [...tf.resources.keys(), ...[...tf.data].map((d) => d.replace(/^data\./, ''))].map(
      (a) => a.split('.')[0] ?? '',
    );
    for (const type of types) expect(apiOf(type), type).not.toBeUndefined();
    expect(apiOf('google_pubsub_topic_iam_member')).toBe('pubsub.googleapis.com');
    expect(apiOf('google_service_account_iam_member')).toBe('iam.googleapis.com');
    expect(apiOf('google_project_iam_member')).toBe('cloudresourcemanager.googleapis.com');
    expect(apiOf('google_container_cluster')).toBeUndefined();
    expect(apiOf('google_project_iam_binding')).toBeUndefined(); // a family only where it ends in `_`
  });

  it('finds a resource ordered before its API, one enabled by another instance, and an unmapped type', async () => {
    const graph = await snippet({
      'main.tf': [
        'resource "google_project_service" "apis" {',
        '  for_each = toset(["pubsub.googleapis.com", "iam.googleapis.com"])',
        '  service  = each.value',
        '}',
        'resource "google_pubsub_topic" "early" {',
        '  name = "t"',
        '}',
        'resource "google_pubsub_topic" "ordered" {',
        '  name       = "t"',
        '  depends_on = [google_project_service.apis]',
        '}',
        'resource "google_pubsub_topic_iam_member" "through_topic" {',
        '  topic  = google_pubsub_topic.ordered.name',
        '  role   = "r"',
        '  member = local.member',
        '}',
        'locals {',
        '  member = "serviceAccount:${google_service_account.wrong_api.email}"',
        '}',
        'resource "google_service_account" "wrong_api" {',
        '  account_id = "a"',
        '  depends_on = [google_project_service.apis["pubsub.googleapis.com"]]',
        '}',
        'resource "google_container_cluster" "c" {',
        '  depends_on = [google_project_service.apis]',
        '}',
      ].join('\n'),
    });
    expect((await apiOrderProblems(graph)).sort()).toEqual([
      'google_container_cluster.c: google_container_cluster is not mapped to the API it calls (api-graph.ts API_OF_TYPE)',
      'google_pubsub_topic.early: needs pubsub.googleapis.com but does not depend on the google_project_service that enables it',
      'google_service_account.wrong_api: needs iam.googleapis.com but does not depend on the google_project_service that enables it',
    ]);
  }, 60_000);
});
