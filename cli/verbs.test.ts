/**
 * The verbs' table: every verb is reached by its words and listed in the help, a word that is not a
 * resource is refused, and (checked by `npm run typecheck`) the table cannot lack a verb, hold one
 * with no shape, or let a build read a flag its verb does not list.
 */
import { describe, expect, it } from 'vitest';
import { USAGE, parseCommand } from './args.js';
import { UsageError, type VerbId } from './command.js';
import { VERBS, verb } from './verbs.js';

/** The least command line of each verb: its words, then what it must have. */
const LEAST: Record<VerbId, string> = {
  apply: 'apply -f fleet.yaml',
  'get-proxies': 'get proxies',
  'get-proxy': 'get proxy eu-1',
  'describe-proxy': 'describe proxy eu-1',
  'delete-proxy': 'delete proxy eu-1',
  'report-proxy': 'report proxy eu-1 --reason banned',
  'get-providers': 'get providers',
  'get-pools': 'get pools',
  'get-pool': 'get pool crawl',
  'describe-pool': 'describe pool crawl',
  'delete-pool': 'delete pool crawl',
  'scale-pool': 'scale pool crawl --replicas 2',
  discover: 'discover',
  gateway: 'gateway',
  cost: 'cost --config c.yaml --proxies 3',
  doctor: 'doctor --config c.yaml --proxies 3',
};

describe('the verbs table', () => {
  it.each(Object.entries(LEAST))('%s is what "egress %s" parses to', (id, line) => {
    expect(parseCommand(line.split(' '))).toMatchObject({ verb: id });
  });

  it('the help lists every verb by its synopsis, in the table order', () => {
    const at = Object.values(VERBS).map(({ synopsis }) => USAGE.indexOf(`\n  ${synopsis}`));
    expect(at.every((i) => i > 0)).toBe(true);
    expect(at).toEqual([...at].sort((a, b) => a - b));
    expect(USAGE).toContain('\n  get proxy NAME [-o table|wide|json|yaml]   show one proxy\n');
    expect(USAGE).toContain(
      '\n  delete proxy NAME... [--wait] [--timeout 5m]\n                                             delete proxies;',
    );
  });

  it.each(['constructor', 'toString', '__proto__'])('"get %s" is an unknown resource, not a list', (word) => {
    expect(() => parseCommand(['get', word])).toThrow(UsageError);
    expect(() => parseCommand(['get', word])).toThrow(`unknown resource "${word}" for get`);
  });

  it('a verb word runs its verb; a verb that takes none refuses a resource', () => {
    expect(() => parseCommand(['discover', 'proxies'])).toThrow('unexpected argument "proxies" for discover');
    expect(() => parseCommand(['get-proxies'])).toThrow('unknown command "get-proxies"');
  });
});

describe('the compiler holds the table complete', () => {
  it('refuses a table without a verb, a verb without a shape, and a build that reads a flag not listed', () => {
    const { doctor: _doctor, ...withoutDoctor } = VERBS;
    // @ts-expect-error doctor has a shape in CommandShapes, so the table must define it
    const incomplete: typeof VERBS = withoutDoctor;
    // @ts-expect-error 'frobnicate' has no shape in CommandShapes
    const extra: typeof VERBS = { ...VERBS, frobnicate: VERBS.discover };
    const wrongFlag = verb<'get-pools', 'output'>({
      synopsis: 'get pools',
      help: [],
      flags: ['output'],
      operands: 'none',
      // @ts-expect-error get pools does not list --watch, so its build cannot read it
      build: (_, values) => ({ output: values.watch ? 'wide' : 'table' }),
      run: async () => {},
    });
    expect([incomplete, extra, wrongFlag].length).toBe(3);
  });
});
