import { describe, expect, it } from 'vitest';
import { decodeBody } from './bus/message.js';
import { createLogger } from './logger.js';
import { handleRequest, type RequestDeps } from './requests.js';
import { ManualClock } from './store/clock.js';
import { MemoryProxyRepository } from './store/memory/proxies.js';

const apply = (name: string) => ({
  apiVersion: 'egress.dev/v1',
  kind: 'Proxy',
  action: 'apply',
  metadata: { name },
  spec: { provider: 'local' },
});

/**
 * Request deps whose event writes wait until `finish` is called (then fail when `failWith` is
 * set), and whose check records the names it was asked.
 */
function slowEvents() {
  const clock = new ManualClock();
  const proxies = new MemoryProxyRepository(clock);
  let finish: (failWith?: Error) => void = () => undefined;
  proxies.addEvent = () =>
    new Promise<void>((resolve, reject) => {
      finish = (failWith) => (failWith ? reject(failWith) : resolve());
    });
  const checked: string[][] = [];
  const deps: RequestDeps = {
    proxies,
    bus: { publish: () => Promise.resolve('m') },
    logger: createLogger({ write: () => undefined }),
    maxEvents: 5,
    now: () => clock.now(),
    check: (names) => Promise.resolve(void checked.push(names)),
  };
  const handle = (name: string) => handleRequest(deps, decodeBody('m1', clock.now(), {}, JSON.stringify(apply(name))));
  return { handle, checked, finish: (failWith?: Error) => finish(failWith) };
}

describe('handleRequest: the event write and the check', () => {
  it('starts the check without waiting for the event write, and answers only once both are done', async () => {
    const { handle, checked, finish } = slowEvents();
    let answered = false;
    const handled = handle('p1').then((o) => {
      answered = true;
      return o;
    });
    await expect.poll(() => checked).toEqual([['p1']]);
    expect(answered).toBe(false);
    finish();
    expect(await handled).toBe('created');
  });

  it('a failed event write is thrown (the message is redelivered) after the check ran', async () => {
    const { handle, checked, finish } = slowEvents();
    const handled = handle('p2');
    await expect.poll(() => checked).toEqual([['p2']]);
    finish(new Error('deadline exceeded'));
    await expect(handled).rejects.toThrow('deadline exceeded');
  });
});
