/** formatHcl: terraform fmt's indentation and `=` alignment rules. */
import { describe, expect, it } from 'vitest';
import { formatHcl } from './hcl-format.js';

describe('formatHcl', () => {
  it('indents two spaces per opening line and aligns a run of one-line attributes', () => {
    const input = ['resource "a" "b" {', 'name = "x"', '    project_id = var.p', '}', ''].join('\n');
    expect(formatHcl(input)).toBe(
      ['resource "a" "b" {', '  name       = "x"', '  project_id = var.p', '}', ''].join('\n'),
    );
  });

  it('breaks the alignment at a multi-line value, a blank line and a nested block', () => {
    const text = [
      'x {',
      '  a = 1',
      '  labels = {',
      '    k = "v"',
      '  }',
      '  bb = 2',
      '',
      '  ccc = 3',
      '  inner {',
      '    d = 4',
      '  }',
      '}',
      '',
    ].join('\n');
    expect(formatHcl(text)).toBe(text);
  });

  it('ignores `=` inside strings, comparisons and `=>`, and brackets inside strings', () => {
    const text = [
      'locals {',
      '  m = { for k, v in var.x : k => v if v == "{" }',
      '  s = "a = b ${var.c["{"]}"',
      '}',
      '',
    ].join('\n');
    expect(formatHcl(text)).toBe(text);
  });

  it('closes several levels opened on one line at once', () => {
    const input = ['a = merge([', 'for x in y : {', 'k = x', '}', ']...)', 'b = 1', ''].join('\n');
    expect(formatHcl(input)).toBe(
      ['a = merge([', '  for x in y : {', '    k = x', '  }', ']...)', 'b = 1', ''].join('\n'),
    );
  });

  it('leaves a heredoc as written', () => {
    const text = ['x = <<-EOT', '   keep   = this', '  EOT', 'y = 1', ''].join('\n');
    expect(formatHcl(text)).toBe(text);
  });
});
