/** infra/kubernetes/rbac.yaml grants exactly the access `check` asks about (REQUIRED_ACCESS), no more and no less. */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { REQUIRED_ACCESS } from './index.js';

const root = resolve(import.meta.dirname, '..', '..', '..');
const roleSchema = z.object({
  kind: z.literal('Role'),
  rules: z.array(
    z.object({ apiGroups: z.array(z.string()), resources: z.array(z.string()), verbs: z.array(z.string()) }),
  ),
});

/** `verb resource` for every grant of the Role in infra/kubernetes/rbac.yaml. */
function granted(): string[] {
  const docs: unknown[] = parseAllDocuments(readFileSync(join(root, 'infra', 'kubernetes', 'rbac.yaml'), 'utf8')).map(
    (d) => d.toJSON() as unknown,
  );
  const roles = docs.flatMap((d) => {
    const role = roleSchema.safeParse(d);
    return role.success ? [role.data] : [];
  });
  expect(roles).toHaveLength(1);
  return (roles[0]?.rules ?? []).flatMap((rule) => {
    expect(rule.apiGroups, 'pods and secrets are in the core API group').toEqual(['']);
    return rule.resources.flatMap((resource) => rule.verbs.map((verb) => `${verb} ${resource}`));
  });
}

describe('infra/kubernetes/rbac.yaml against the kubernetes provider', () => {
  it('grants exactly REQUIRED_ACCESS', () => {
    const required = REQUIRED_ACCESS.map((a) => `${a.verb} ${a.resource}`);
    expect(granted().sort()).toEqual([...required].sort());
  });
});
