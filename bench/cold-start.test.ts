import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { staticImports } from './cold-start.js';

describe('staticImports', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const bundle = (text: string) => {
    const dir = mkdtempSync(join(tmpdir(), 'static-imports-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'index.js'), text);
    return join(dir, 'index.js');
  };

  it('finds the packages of a minified bundle, whose imports are mid-line', () => {
    const file = bundle(
      "import { createRequire as r } from 'node:module'; const require = r(import.meta.url);\n" +
        'import{a as m}from"./chunks/chunk-A.js";var x=1;s})});import{cloudEvent as G3}from"@google-cloud/functions-framework";import"side-effect";X();',
    );
    expect(staticImports(file)).toEqual(['@google-cloud/functions-framework', 'side-effect']);
  });

  it('finds the packages of an unminified bundle, one import per line', () => {
    const file = bundle(
      'import { z } from "zod";\nimport * as fs from "node:fs";\nimport "./chunk.js";\nconst from = "x";\n',
    );
    expect(staticImports(file)).toEqual(['zod']);
  });
});
