/**
 * Checks every resource, data source and provider block of a Terraform directory against its
 * provider's published schema (provider-schema.ts): unknown types, unknown or misspelt arguments and
 * blocks, missing required ones, and a block given more often than the provider allows.
 */
import { bodies, labelledBlocks, type Body, type TerraformDir } from './hcl-files.js';
import { providerOf, schemaOf, type BlockSchema } from './provider-schema.js';

/** Meta-arguments Terraform itself takes in a resource or data block (not the provider's schema). */
const META = new Set(['count', 'for_each', 'depends_on', 'provider', 'lifecycle', 'provisioner', 'connection']);
/** A provider block's own meta-argument. */
const PROVIDER_META = new Set(['alias']);

/** The problems of one block body against its schema, each as `<path>: <reason>`. */
function checkBlock(body: Body, schema: BlockSchema, path: string, meta: Set<string>, out: string[]): void {
  const dynamic = new Map<string, Body[]>();
  for (const d of bodies(body['dynamic'])) {
    for (const [name, specs] of Object.entries(d)) dynamic.set(name, [...(dynamic.get(name) ?? []), ...bodies(specs)]);
  }
  for (const [key, value] of Object.entries(body)) {
    if (key === 'dynamic' || key === '//' || meta.has(key)) continue;
    const block = schema.blocks.get(key);
    if (block) {
      const given = bodies(value);
      if (given.length === 0) out.push(`${path}.${key}: a block is expected`);
      if (block.single && given.length > 1) out.push(`${path}.${key}: at most one block is allowed`);
      for (const b of given) checkBlock(b, block.schema, `${path}.${key}`, new Set(), out);
    } else if (!schema.attributes.has(key)) {
      out.push(`${path}.${key}: unknown argument`);
    }
  }
  for (const [name, specs] of dynamic) {
    const block = schema.blocks.get(name);
    if (!block) {
      out.push(`${path}.dynamic.${name}: unknown block`);
      continue;
    }
    for (const spec of specs) {
      for (const content of bodies(spec['content']))
        checkBlock(content, block.schema, `${path}.${name}`, new Set(), out);
    }
  }
  for (const [name, attribute] of schema.attributes) {
    if (attribute.required && !(name in body)) out.push(`${path}.${name}: missing required argument`);
  }
  for (const [name, block] of schema.blocks) {
    if (block.required && !(name in body) && !dynamic.has(name)) out.push(`${path}.${name}: missing required block`);
  }
}

/**
 * Every schema problem in the directory.
 *
 * @returns messages like `functions.tf: google_cloudfunctions2_function.fn.service_config.vpc_conector: unknown argument`
 */
export function schemaProblems(tf: TerraformDir): string[] {
  const out: string[] = [];
  for (const [file, body] of tf.files) {
    const problems: string[] = [];
    for (const [kind, key] of [
      ['resource', 'resource'],
      ['data', 'data'],
    ] as const) {
      for (const [type, name, b] of labelledBlocks(body[key])) {
        const address = kind === 'data' ? `data.${type}.${name}` : `${type}.${name}`;
        const pkg = providerOf(type);
        const schema = schemaOf(type, kind);
        if (!pkg) problems.push(`${address}: no schema package for the provider of ${type}`);
        else if (!schema)
          problems.push(
            `${address}: unknown ${kind === 'data' ? 'data source' : 'resource'} type of ${pkg.source} ${pkg.version}`,
          );
        else checkBlock(b, schema, address, META, problems);
      }
    }
    for (const group of bodies(body['provider'])) {
      for (const [name, configs] of Object.entries(group)) {
        const schema = schemaOf(name, 'provider');
        for (const b of bodies(configs)) {
          if (!schema) problems.push(`provider.${name}: no schema package for this provider`);
          else checkBlock(b, schema, `provider.${name}`, PROVIDER_META, problems);
        }
      }
    }
    out.push(...problems.map((p) => `${file}: ${p}`));
  }
  return out;
}
