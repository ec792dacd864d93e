/** Connections to the fleet proxies (TCP, or TLS pinned to the proxy's fingerprint): a keep-alive agent per proxy, or a new connection per request to one that closes each. */
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { connectPinned } from '../shared/tls/pinned.js';
import type { Upstream } from './selection.js';

type Ready = (err: Error | null, socket: Duplex) => void;

/**
 * The connection of a request to a proxy that closes every connection (tinyproxy): a plain socket
 * given to `http.request` as `createConnection`, with no Agent. An Agent would only keep books on
 * a socket that is never reused (its pools, four listeners per socket, a `free` event per
 * response); `agent: false` would even build a new Agent for every request. Without an Agent Node
 * may still send `Connection: keep-alive` (it does for a request with a body); the proxy closes
 * after its response either way, and Node destroys the socket once the response ends. `noDelay`,
 * as Node's Agent sets it: a body written after the head is not held back.
 */
export function connectAnew(upstream: Upstream, timeoutMs?: number) {
  return (_options: http.ClientRequestArgs, ready?: Ready): net.Socket | undefined => {
    if (!upstream.tls) return net.connect({ host: upstream.host, port: upstream.port, noDelay: true });
    // The request gets its socket once the certificate matched: nothing is written before. The
    // handshake has its own deadline: a port that accepts and never answers it (a plain proxy now
    // listening at a stale TLS address reads the ClientHello as the start of a request and waits)
    // would otherwise hold the request until that peer closes.
    const pinned = { host: upstream.host, port: upstream.port, fingerprint: upstream.tls.fingerprint, timeoutMs };
    connectPinned(pinned, (err, socket) => ready?.(err, socket));
    return undefined;
  };
}

const keyOf = (u: Upstream) => `${u.name}@${u.host}:${u.port}${u.tls ? `#${u.tls.fingerprint}` : ''}`;

/** Kept-alive sockets found closed in a row, with no reuse that worked between, that mark a proxy as closing every connection. */
const STALE_IN_A_ROW = 3;

/**
 * Keep-alive agents, one per fleet proxy, dropped when the proxy leaves the Ready list. A proxy
 * that closes every connection after its answer without saying so (tinyproxy: HTTP/1.1 without
 * `Connection: close`) gets none once seen doing it: each reuse would only meet a closed socket.
 */
export class UpstreamAgents {
  /** @param connectTimeoutMs - the deadline of a TLS listener's connect and handshake */
  constructor(private readonly connectTimeoutMs?: number) {}

  private readonly agents = new Map<string, http.Agent>();
  /** Per proxy, kept-alive sockets found closed since the last reuse that worked. */
  private readonly staleInARow = new Map<string, number>();

  /** @returns the proxy's agent; undefined for a proxy that closes every connection (connect anew) */
  get(upstream: Upstream): http.Agent | undefined {
    if (!this.keepsAlive(upstream)) return undefined;
    const key = keyOf(upstream);
    let agent = this.agents.get(key);
    if (!agent) {
      agent = new http.Agent({ keepAlive: true, maxFreeSockets: 64, scheduling: 'lifo', timeout: 30_000 });
      if (upstream.tls) agent.createConnection = connectAnew(upstream, this.connectTimeoutMs);
      this.agents.set(key, agent);
    }
    return agent;
  }

  /** A kept-alive socket to `upstream` had been closed by it. */
  stale(upstream: Upstream): void {
    const key = keyOf(upstream);
    this.staleInARow.set(key, (this.staleInARow.get(key) ?? 0) + 1);
    // Once it closes every connection, its agent is dropped, not destroyed (that would cut requests
    // in flight): its sockets close with their answers.
    if (!this.keepsAlive(upstream)) this.agents.delete(key);
  }

  /** A kept-alive socket to `upstream` carried an answer. */
  reused(upstream: Upstream): void {
    this.staleInARow.delete(keyOf(upstream));
  }

  /** Whether requests to `upstream` still go on kept-alive sockets. */
  keepsAlive(upstream: Upstream): boolean {
    return (this.staleInARow.get(keyOf(upstream)) ?? 0) < STALE_IN_A_ROW;
  }

  /** Destroys the agents (and forgets what was learnt) of proxies not in `current`. */
  prune(current: readonly Upstream[]): void {
    const keep = new Set(current.map(keyOf));
    for (const [key, agent] of this.agents) {
      if (!keep.has(key)) {
        agent.destroy();
        this.agents.delete(key);
      }
    }
    for (const key of this.staleInARow.keys()) if (!keep.has(key)) this.staleInARow.delete(key);
  }

  destroy(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}
