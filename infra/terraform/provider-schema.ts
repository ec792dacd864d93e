/**
 * The published schema of a Terraform resource or data source, read offline from the prebuilt CDKTF
 * provider packages (`@cdktf/provider-google`, `-archive`, `-random`): each is generated from the
 * provider's own `terraform providers schema -json`, and its `lib/<resource>/index.d.ts` declares
 * every configurable argument and block as a property, non-optional where the provider requires it,
 * a struct for a block (an array for a list/set block, a single struct where the provider allows at
 * most one), with the Terraform name as the anchor of its registry link. Computed-only attributes
 * are getters of the class, not properties of the config, so setting one is an unknown argument as
 * it is for Terraform.
 *
 * Why the `.d.ts` files: the package's `.jsii` holds the same in one 99 MB JSON document, to be parsed
 * whole for the few resources used here; its `*ToHclTerraform` functions (`index.js`) give names and
 * block/attribute kinds but not which arguments are required. Numeric limits beyond "at least one"
 * and "at most one" (min/max items) are in none of them.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import ts from 'typescript';

/** What a block (or a resource's top level) accepts. */
export interface BlockSchema {
  /** Terraform name → whether the provider requires it. */
  attributes: Map<string, { required: boolean }>;
  /** Terraform name → the nested block: required (min_items ≥ 1), single (max_items = 1) and its schema. */
  blocks: Map<string, { required: boolean; single: boolean; schema: BlockSchema }>;
}

/** A provider whose schema package is installed. */
export interface ProviderPackage {
  /** The npm package it is read from. */
  npm: string;
  /** `hashicorp/google` */
  source: string;
  /** The provider version the package was generated from (from its registry links). */
  version: string;
  dir: string;
}

/** Provider name (the type prefix before the first `_`) → the package generated from it. */
const PACKAGES: Record<string, string> = {
  google: '@cdktf/provider-google',
  archive: '@cdktf/provider-archive',
  random: '@cdktf/provider-random',
};

const require = createRequire(import.meta.url);
const providers = new Map<string, ProviderPackage>();

/**
 * The installed schema package of the provider a type belongs to.
 *
 * @param type - a resource or data source type, e.g. `google_pubsub_topic`
 * @returns undefined when no package for its provider is installed
 */
export function providerOf(type: string): ProviderPackage | undefined {
  const name = type.split('_')[0] ?? '';
  const npm = PACKAGES[name];
  if (!npm) return undefined;
  const cached = providers.get(name);
  if (cached) return cached;
  const dir = dirname(dirname(require.resolve(npm)));
  const sample = readFileSync(join(dir, 'lib', 'provider', 'index.d.ts'), 'utf8');
  const link = /registry\.terraform\.io\/providers\/([\w-]+\/[\w-]+)\/(\d+\.\d+\.\d+)\//.exec(sample);
  if (!link?.[1] || !link[2]) throw new Error(`${npm}: no registry link to read the provider version from`);
  const found: ProviderPackage = { npm, source: link[1], version: link[2], dir };
  providers.set(name, found);
  return found;
}

const kebab = (s: string) => s.replace(/_/g, '-');

/** The `lib/<dir>/index.d.ts` whose class declares `tfResourceType = "<type>"`, by name first, else by search. */
function declarationFile(pkg: ProviderPackage, type: string, kind: 'resource' | 'data'): string | undefined {
  const marker = `static readonly tfResourceType = "${type}";`;
  const prefix = kind === 'data' ? 'data-' : '';
  const guesses = [
    `${prefix}${kebab(kind === 'data' ? type : type.slice(type.indexOf('_') + 1))}`,
    `${prefix}${kebab(type.slice(type.indexOf('_') + 1))}-resource`,
  ];
  const lib = join(pkg.dir, 'lib');
  const fits = (d: string) => {
    const file = join(lib, d, 'index.d.ts');
    return existsSync(file) && readFileSync(file, 'utf8').includes(marker) ? file : undefined;
  };
  for (const guess of guesses) {
    const file = fits(guess);
    if (file) return file;
  }
  for (const d of readdirSync(lib)) {
    if (d.startsWith('data-') !== (kind === 'data')) continue;
    const file = fits(d);
    if (file) return file;
  }
  return undefined;
}

const snake = (camel: string) => camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The struct interface a property's type names (`X` or `X[] | cdktf.IResolvable`), and whether it is a list. */
function structOf(type: ts.TypeNode | undefined, interfaces: Map<string, ts.InterfaceDeclaration>) {
  const members = type && ts.isUnionTypeNode(type) ? type.types : type ? [type] : [];
  for (const m of members) {
    const list = ts.isArrayTypeNode(m);
    const element = list ? m.elementType : m;
    if (ts.isTypeReferenceNode(element) && ts.isIdentifier(element.typeName)) {
      const found = interfaces.get(element.typeName.text);
      if (found) return { struct: found, list };
    }
  }
  return undefined;
}

function blockSchema(
  decl: ts.InterfaceDeclaration,
  interfaces: Map<string, ts.InterfaceDeclaration>,
  source: ts.SourceFile,
): BlockSchema {
  const schema: BlockSchema = { attributes: new Map(), blocks: new Map() };
  for (const member of decl.members) {
    if (!ts.isPropertySignature(member) || !ts.isIdentifier(member.name)) continue;
    const doc = member.getFullText(source);
    // The registry link's anchor is the Terraform name (`…#vpc_connector Cloudfunctions2Function#…`).
    const name = /Docs at Terraform Registry: \{@link \S+#(\w+) /.exec(doc)?.[1] ?? snake(member.name.text);
    const required = member.questionToken === undefined;
    const struct = structOf(member.type, interfaces);
    if (struct && new RegExp(`\\b${name} block\\b`).test(doc)) {
      schema.blocks.set(name, {
        required,
        single: !struct.list,
        schema: blockSchema(struct.struct, interfaces, source),
      });
    } else {
      schema.attributes.set(name, { required });
    }
  }
  return schema;
}

const schemas = new Map<string, BlockSchema | undefined>();

/**
 * The schema of a resource, data source or provider configuration.
 *
 * @param type - `google_pubsub_topic`; for a provider's own configuration its name (`google`)
 * @returns undefined when the provider's package has no such type
 */
export function schemaOf(type: string, kind: 'resource' | 'data' | 'provider'): BlockSchema | undefined {
  const key = `${kind}:${type}`;
  if (schemas.has(key)) return schemas.get(key);
  const pkg = providerOf(kind === 'provider' ? `${type}_` : type);
  const file = !pkg
    ? undefined
    : kind === 'provider'
      ? join(pkg.dir, 'lib', 'provider', 'index.d.ts')
      : declarationFile(pkg, type, kind);
  let schema: BlockSchema | undefined;
  if (file) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    const interfaces = new Map<string, ts.InterfaceDeclaration>();
    for (const s of source.statements) if (ts.isInterfaceDeclaration(s)) interfaces.set(s.name.text, s);
    // The first interface is the resource's config (it extends cdktf.TerraformMetaArguments or, for
    // the provider, stands alone).
    const config = source.statements.find(ts.isInterfaceDeclaration);
    if (config) schema = blockSchema(config, interfaces, source);
  }
  schemas.set(key, schema);
  return schema;
}
