/** What the gateway learns about a fleet proxy's connections: kept alive until it is seen closing every one. */
import { describe, expect, it } from 'vitest';
import { UpstreamAgents } from './http-forward.js';
import type { Upstream } from './selection.js';

const upstream = (name: string): Upstream => ({
  name,
  provider: 'p',
  host: '127.0.0.1',
  port: 3128,
  authorization: 'Basic eDp5',
  egressIp: undefined,
});

describe('upstream agents', () => {
  it('stop keeping alive the connections of a proxy that closed three kept-alive sockets in a row', () => {
    const agents = new UpstreamAgents();
    const tiny = upstream('tiny');
    expect(agents.get(tiny)).toBeDefined();
    agents.stale(tiny);
    agents.stale(tiny);
    expect(agents.keepsAlive(tiny)).toBe(true);
    agents.stale(tiny);
    expect(agents.keepsAlive(tiny)).toBe(false);
    expect(agents.get(tiny)).toBeUndefined();
    agents.destroy();
  });

  it('keep alive a proxy whose closed sockets are rare (a reuse that worked resets the count)', () => {
    const agents = new UpstreamAgents();
    const node = upstream('node');
    for (let i = 0; i < 10; i++) {
      agents.stale(node);
      agents.stale(node);
      agents.reused(node);
    }
    expect(agents.keepsAlive(node)).toBe(true);
    expect(agents.get(node)).toBeDefined();
    agents.destroy();
  });

  it('forget what they learnt of a proxy that left the Ready list', () => {
    const agents = new UpstreamAgents();
    const tiny = upstream('tiny');
    for (let i = 0; i < 3; i++) agents.stale(tiny);
    agents.prune([upstream('other')]);
    expect(agents.keepsAlive(tiny)).toBe(true);
    agents.destroy();
  });
});
