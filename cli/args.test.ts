/** Command-line parsing: every verb of README.md "The `egress` CLI", and the mistakes that are usage errors (exit 2). */
import { describe, expect, it } from 'vitest';
import { parseCommand } from './args.js';
import { UsageError } from './command.js';

const split = (line: string) => line.split(' ').filter(Boolean);

describe('parseCommand', () => {
  it.each([
    ['apply -f fleet.yaml', { verb: 'apply', files: ['fleet.yaml'], wait: false, timeoutMs: 300_000 }],
    [
      'apply -f a.yaml -f b.yaml --wait --timeout 90s',
      { verb: 'apply', files: ['a.yaml', 'b.yaml'], wait: true, timeoutMs: 90_000 },
    ],
    ['apply --filename=- --wait', { verb: 'apply', files: ['-'], wait: true }],
    ['get proxies', { verb: 'get-proxies', output: 'table', labels: [], watch: false }],
    [
      'get proxies -o wide --provider local --phase Ready -l team=demo -w',
      { verb: 'get-proxies', output: 'wide', provider: 'local', phase: 'Ready', labels: ['team=demo'], watch: true },
    ],
    ['get proxy', { verb: 'get-proxies', output: 'table' }],
    ['get proxy eu-1 -o yaml', { verb: 'get-proxy', name: 'eu-1', output: 'yaml' }],
    ['get proxies eu-1 --output=json', { verb: 'get-proxy', name: 'eu-1', output: 'json' }],
    ['get providers', { verb: 'get-providers', output: 'table' }],
    ['get providers -o json', { verb: 'get-providers', output: 'json' }],
    ['describe proxy eu-1', { verb: 'describe-proxy', name: 'eu-1' }],
    ['delete proxy eu-1', { verb: 'delete-proxy', names: ['eu-1'], wait: false }],
    [
      'delete proxies a b --wait --timeout 1m',
      { verb: 'delete-proxy', names: ['a', 'b'], wait: true, timeoutMs: 60_000 },
    ],
    ['discover', { verb: 'discover', output: 'urls', labels: [], distinct: false, random: false }],
    [
      'discover -o json --provider local --label team=demo --label zone=a --max-latency-ms 200 --distinct --limit 3 --random',
      {
        verb: 'discover',
        output: 'json',
        provider: 'local',
        labels: ['team=demo', 'zone=a'],
        maxLatencyMs: 200,
        distinct: true,
        limit: 3,
        random: true,
      },
    ],
    [
      'discover --pool crawl --for Shop.Example.com.',
      { verb: 'discover', pool: 'crawl', forDomain: 'shop.example.com', labels: [] },
    ],
    ['--help', { verb: 'help' }],
    ['help', { verb: 'help' }],
    ['get proxies -h', { verb: 'help' }],
  ])('%s', (line, expected) => {
    expect(parseCommand(split(line))).toMatchObject(expected);
  });

  it.each([
    ['', /missing command/],
    ['frobnicate', /unknown command "frobnicate"/],
    ['get proxies --bogus', /unknown flag: --bogus/],
    ['get proxies -x', /unknown flag: -x/],
    ['get proxies --wait', /unknown flag --wait for "egress get proxies"/],
    ['describe proxy eu-1 -o json', /unknown flag --output/],
    ['discover -w', /unknown flag --watch/],
    ['get', /missing resource/],
    ['get widgets', /unknown resource "widgets"/],
    ['describe providers', /unknown resource "providers" for describe/],
    ['describe proxy', /missing proxy name/],
    ['delete proxy', /missing proxy name/],
    ['delete proxy Not_A_Name', /invalid proxy name "Not_A_Name"/],
    ['get proxy a b', /unexpected argument "b"/],
    ['apply', /missing -f FILE/],
    ['apply -f', /flag .*--filename needs a value/],
    ['apply fleet.yaml', /unexpected argument "fleet.yaml"/],
    ['apply -f x.yaml --timeout soon', /--timeout must be a duration/],
    ['apply -f x.yaml --wait=yes', /takes no value/],
    ['get proxies -o xml', /--output must be one of table, wide, json, yaml/],
    ['get proxies --phase Sleeping', /--phase must be one of Pending/],
    ['get proxies -l team', /--label must be key=value/],
    ['discover -o table', /--output must be one of urls, json/],
    ['discover --limit 0', /--limit must be a positive integer/],
    ['discover --for https://example.com/x', /--for must be a host name/],
    ['discover --pool Crawl_1', /pool/],
    ['discover --max-latency-ms fast', /--max-latency-ms must be a positive integer/],
  ])('rejects "%s"', (line, message) => {
    expect(() => parseCommand(split(line))).toThrow(UsageError);
    expect(() => parseCommand(split(line))).toThrow(message);
  });
});

describe('pool verbs', () => {
  it.each([
    ['get pools', { verb: 'get-pools', output: 'table' }],
    ['get pool crawl -o json', { verb: 'get-pool', name: 'crawl', output: 'json' }],
    ['describe pool crawl', { verb: 'describe-pool', name: 'crawl' }],
    ['delete pool crawl --wait', { verb: 'delete-pool', name: 'crawl', wait: true, timeoutMs: 300_000 }],
    [
      'scale pool crawl --replicas 0 --wait',
      { verb: 'scale-pool', name: 'crawl', replicas: 0, wait: true, timeoutMs: 300_000 },
    ],
  ])('%s', (line, want) => {
    expect(parseCommand(line.split(' '))).toEqual(want);
  });

  it.each([
    ['scale pool crawl', /missing --replicas/],
    ['scale pool crawl --replicas -1', /--replicas/],
    ['scale pool crawl --replicas two', /whole number/],
    ['scale proxy x --replicas 2', /egress scale pool NAME/],
    ['describe pool', /missing pool name/],
    ['get pools --replicas 2', /unknown flag --replicas/],
  ])('%s is a usage error', (line, want) => {
    expect(() => parseCommand(line.split(' '))).toThrow(want);
  });
});
