/** `egress gateway` on the command line: its flags, their mistakes (exit 2), and the credentials from the environment. */
import { describe, expect, it } from 'vitest';
import { parseCommand } from './args.js';
import { UsageError } from './command.js';
import { gatewayCredentials } from './gateway.js';

const split = (line: string) => line.split(' ').filter(Boolean);

describe('egress gateway flags', () => {
  it.each([
    [
      'gateway',
      { verb: 'gateway', listen: { host: '127.0.0.1', port: 8899 }, labels: [], banOn: [], socksNoAuthFrom: [] },
    ],
    [
      'gateway --listen 0.0.0.0:0 --pool crawl -l team=a -l zone=b --provider local --ban-on 403,429 --metrics 127.0.0.1:9464',
      {
        verb: 'gateway',
        listen: { host: '0.0.0.0', port: 0 },
        pool: 'crawl',
        provider: 'local',
        labels: ['team=a', 'zone=b'],
        banOn: [403, 429],
        metrics: { host: '127.0.0.1', port: 9464 },
      },
    ],
    ['gateway --listen [::1]:8899', { verb: 'gateway', listen: { host: '::1', port: 8899 } }],
    ['gateway --socks-no-auth 127.0.0.1,::1', { verb: 'gateway', socksNoAuthFrom: ['127.0.0.1', '::1'] }],
  ])('%s', (line, expected) => {
    expect(parseCommand(split(line))).toMatchObject(expected);
  });

  it.each([
    ['gateway --listen 8899', /--listen must be HOST:PORT/],
    ['gateway --listen host:70000', /--listen must be HOST:PORT/],
    ['gateway --metrics :9464', /--metrics must be HOST:PORT/],
    ['gateway --ban-on 403,abc', /--ban-on must be HTTP statuses/],
    ['gateway --ban-on 99', /--ban-on must be HTTP statuses/],
    ['gateway --socks-no-auth 10.0.0.1', /--socks-no-auth must be loopback addresses/],
    ['gateway --socks-no-auth localhost', /--socks-no-auth must be loopback addresses/],
    ['gateway -l team', /--label must be key=value/],
    ['gateway extra', /unexpected argument "extra"/],
    ['gateway --random', /unknown flag --random for "egress gateway"/],
  ])('%s is a usage error', (line, message) => {
    expect(() => parseCommand(split(line))).toThrow(UsageError);
    expect(() => parseCommand(split(line))).toThrow(message);
  });
});

describe('gateway credentials from the environment', () => {
  it('takes both, or neither (random)', () => {
    expect(gatewayCredentials({})).toBeUndefined();
    expect(gatewayCredentials({ EGRESS_GATEWAY_USER: 'u', EGRESS_GATEWAY_PASSWORD: 'p' })).toEqual({
      username: 'u',
      password: 'p',
    });
    expect(() => gatewayCredentials({ EGRESS_GATEWAY_USER: 'u' })).toThrow(
      /both EGRESS_GATEWAY_USER and EGRESS_GATEWAY_PASSWORD/,
    );
    expect(() => gatewayCredentials({ EGRESS_GATEWAY_USER: 'a:b', EGRESS_GATEWAY_PASSWORD: 'p' })).toThrow(
      /must not contain/,
    );
  });
});
