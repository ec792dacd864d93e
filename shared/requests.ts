/** Handling messages on `proxy-requests`: validate, record desired state, check the proxy (or kick a check). */
import type { Bus } from './bus/pubsub.js';
import type { BusMessage } from './bus/message.js';
import type { Config } from './config/schema.js';
import { checkPoolProviders, isPoolRequest, parsePoolRequest, type PoolRequest } from './domain/pool.js';
import { parseProxyRequest } from './domain/proxy.js';
import { EgressError, ValidationError } from './errors.js';
import type { Logger } from './logger.js';
import { checkNowOrKick, type CheckNow } from './reconcile/check.js';
import { kickPools } from './reconcile/kick.js';
import type { PoolRepository, ProxyRepository } from './store/ports.js';
import { TOPICS } from './bus/topics.js';

export interface RequestDeps {
  proxies: ProxyRepository;
  bus: Bus;
  logger: Logger;
  maxEvents: number;
  now?: () => number;
  /** Pools (`kind: ProxyPool`); without it a pool request is rejected. */
  pools?: PoolRepository;
  /** The configured providers a pool's spread is checked against. */
  config?: Pick<Config, 'providers'>;
  /** Checks the proxy in this invocation (the `requests` function); without it, it is kicked. */
  check?: CheckNow;
}

/**
 * Handles one request: records it, then checks the proxy (or kicks a check). Invalid requests are
 * recorded in `rejections/{messageId}` and never retried. Errors that are not the request's fault
 * propagate, so the message is redelivered.
 */
export async function handleRequest(deps: RequestDeps, message: BusMessage): Promise<string> {
  const now = deps.now ?? Date.now;
  let request;
  try {
    if (message.decodeError) throw new ValidationError(message.decodeField ?? '(message)', message.decodeError);
    if (message.json === undefined)
      throw new ValidationError('(message)', 'message has no data; expected a Proxy request as JSON');
    if (isPoolRequest(message.json)) {
      return await handlePoolRequest(deps, parsePoolRequest(message.json), message);
    }
    request = parseProxyRequest(message.json);
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    await reject(deps, message, err, now());
    return 'rejected';
  }
  const name = request.metadata.name;
  try {
    if (request.action === 'apply') {
      const outcome = await deps.proxies.apply(request, message.publishTime, now());
      deps.logger.info(`apply ${outcome}`, { proxy: name, messageId: message.id });
      const event =
        outcome === 'created' || outcome === 'updated'
          ? deps.proxies.addEvent(
              name,
              {
                at: new Date(now()).toISOString(),
                type: 'Normal',
                reason: outcome === 'created' ? 'Accepted' : 'Updated',
                message: `request ${message.id} applied`,
              },
              deps.maxEvents,
            )
          : undefined;
      await alongside(event, outcome !== 'stale' ? checkNowOrKick(deps, [name]) : undefined);
      return outcome;
    }
    const outcome = await deps.proxies.requestDelete(name, message.publishTime, now());
    deps.logger.info(`delete ${outcome}`, { proxy: name, messageId: message.id });
    // Before the check, not alongside it: a check that finalises the proxy removes its events, and
    // an event landing after that would outlive the document.
    if (outcome === 'marked') {
      await deps.proxies.addEvent(
        name,
        {
          at: new Date(now()).toISOString(),
          type: 'Normal',
          reason: 'DeletionRequested',
          message: `request ${message.id}: delete`,
        },
        deps.maxEvents,
      );
    }
    if (outcome === 'marked' || outcome === 'already') await checkNowOrKick(deps, [name]);
    return outcome;
  } catch (err) {
    if (err instanceof ValidationError) {
      await reject(deps, message, err, now());
      return 'rejected';
    }
    throw err;
  }
}

/**
 * Waits for an apply's event write and its check, started together: the check (the provider's
 * create) does not wait for the event's two round trips (add, then trim). Both are
 * waited for before the message is acknowledged; the first failure is thrown (and the message
 * redelivered) only once neither is still running.
 */
async function alongside(event: Promise<void> | undefined, check: Promise<void> | undefined): Promise<void> {
  const settled = await Promise.allSettled([event, check]);
  for (const result of settled) if (result.status === 'rejected') throw result.reason;
}

/** Records a pool request in `pools/{name}` and kicks the pool's reconcile. */
async function handlePoolRequest(deps: RequestDeps, request: PoolRequest, message: BusMessage): Promise<string> {
  const now = deps.now ?? Date.now;
  const name = request.metadata.name;
  if (!deps.pools) throw new ValidationError('kind', 'pools are not enabled in this deployment');
  let outcome: string;
  if (request.action === 'apply') {
    if (deps.config)
      checkPoolProviders(
        request.spec,
        deps.config.providers.map((p) => p.name),
      );
    outcome = await deps.pools.apply(request, message.publishTime, now());
  } else {
    outcome = await deps.pools.requestDelete(name, message.publishTime, now());
  }
  deps.logger.info(`pool ${request.action} ${outcome}`, { pool: name, messageId: message.id });
  const reasons: Record<string, string> = { created: 'Accepted', updated: 'Updated', marked: 'DeletionRequested' };
  const reason = reasons[outcome];
  if (reason) {
    const event = {
      at: new Date(now()).toISOString(),
      type: 'Normal' as const,
      reason,
      message: `request ${message.id}: ${request.action}`,
    };
    await deps.pools.addEvent(name, event, deps.maxEvents);
  }
  if (outcome !== 'stale' && outcome !== 'absent') await kickPools(deps.bus, [name]);
  return outcome;
}

async function reject(deps: RequestDeps, message: BusMessage, err: EgressError, now: number): Promise<void> {
  const info = err.toInfo();
  deps.logger.warn('request rejected', { messageId: message.id, field: info.field, reason: info.message });
  await deps.proxies.reject(message.id, info, message.text, TOPICS.proxyRequests, now);
}
