/** infra/kubernetes/rbac.yaml: current with the topology, bound to the service accounts Terraform creates. */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse } from '@cdktn/hcl2json';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { findTopologyFile, loadTopology } from '../local/topology.js';
import { DEFAULT_NAME_PREFIX, functionServiceAccount, providerFunctions, RBAC_FILE, renderRbac } from './rbac.js';

const root = dirname(dirname(findTopologyFile()));
const topology = loadTopology();
const tfFile = (name: string) => parse(name, readFileSync(join(root, 'infra', 'terraform', name), 'utf8'));

const bindingSchema = z.object({
  kind: z.literal('RoleBinding'),
  subjects: z.array(z.object({ apiGroup: z.string(), kind: z.string(), name: z.string() })),
});

describe('infra/kubernetes/rbac.yaml', () => {
  it('is what `npm run terraform:render` makes of infra/topology.yaml now', () => {
    expect(readFileSync(join(root, RBAC_FILE), 'utf8')).toBe(renderRbac(topology));
  });

  it('changes when a function starts or stops calling providers (so a stale file is caught)', () => {
    const edited = structuredClone(topology);
    const relayReport = edited.functions['relay-report'];
    if (!relayReport) throw new Error('no relay-report in the topology');
    relayReport.callsProviders = true;
    expect(renderRbac(edited)).not.toBe(renderRbac(topology));
    expect(renderRbac(edited)).toContain(functionServiceAccount('relay-report', 'PROJECT_ID'));
  });

  it('binds, as GKE users, exactly the accounts of the functions that call providers', () => {
    const docs = parseAllDocuments(readFileSync(join(root, RBAC_FILE), 'utf8')).map((d) => d.toJSON() as unknown);
    const binding = bindingSchema.parse(docs.find((d) => bindingSchema.safeParse(d).success));
    expect(binding.subjects.map((s) => [s.kind, s.apiGroup])).toEqual(
      binding.subjects.map(() => ['User', 'rbac.authorization.k8s.io']),
    );
    expect(binding.subjects.map((s) => s.name)).toEqual(
      ['requests', 'check', 'gc', 'health'].map((fn) => `egress-fn-${fn}@PROJECT_ID.iam.gserviceaccount.com`),
    );
    expect(providerFunctions(topology)).toEqual(['requests', 'check', 'gc', 'health']);
  });

  it('names the accounts as functions.tf creates them, with var.name_prefix’s default', async () => {
    const variables = z
      .object({ variable: z.object({ name_prefix: z.tuple([z.object({ default: z.string() })]) }) })
      .parse(await tfFile('variables.tf'));
    expect(variables.variable.name_prefix[0].default).toBe(DEFAULT_NAME_PREFIX);
    const functions = z
      .object({
        resource: z.object({
          google_service_account: z.object({ fn: z.tuple([z.object({ account_id: z.string() })]) }),
        }),
      })
      .parse(await tfFile('functions.tf'));
    expect(functions.resource.google_service_account.fn[0].account_id).toBe('${var.name_prefix}fn-${each.key}');
    expect(functionServiceAccount('check', 'my-project', 'x-')).toBe('x-fn-check@my-project.iam.gserviceaccount.com');
  });
});
