/** Handling messages on `proxy-requests`: validate, record desired state, kick a check. */
import type { Bus } from './bus/pubsub.js';
import type { BusMessage } from './bus/message.js';
import { parseProxyRequest } from './domain/proxy.js';
import { EgressError, ValidationError } from './errors.js';
import type { Logger } from './logger.js';
import { kickChecks } from './reconcile/check.js';
import type { ProxyStore } from './store/proxies.js';

export const PROXY_REQUESTS_TOPIC = 'proxy-requests';

export interface RequestDeps {
  proxies: ProxyStore;
  bus: Bus;
  logger: Logger;
  maxEvents: number;
  now?: () => number;
}

/**
 * Handles one request for the given action; requests for the other action are acknowledged and
 * left to the other function. Invalid requests are recorded in `rejections/{messageId}` (by the
 * `apply` side, or the `delete` side for deletes) and never retried. Errors that are not the
 * request's fault propagate, so the message is redelivered.
 */
export async function handleRequest(
  deps: RequestDeps,
  handles: 'apply' | 'delete',
  message: BusMessage,
): Promise<string> {
  const now = deps.now ?? Date.now;
  const claimed =
    typeof message.json === 'object' && message.json !== null && (message.json as Record<string, unknown>)['action'];
  const mine = claimed === handles || (handles === 'apply' && claimed !== 'delete');
  let request;
  try {
    if (message.decodeError) throw new ValidationError(message.decodeField ?? '(message)', message.decodeError);
    if (message.json === undefined)
      throw new ValidationError('(message)', 'message has no data; expected a Proxy request as JSON');
    request = parseProxyRequest(message.json);
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    if (mine) await reject(deps, message, err, now());
    return 'rejected';
  }
  if (request.action !== handles) return 'ignored';
  const name = request.metadata.name;
  try {
    if (request.action === 'apply') {
      const outcome = await deps.proxies.apply(request, message.publishTime, now());
      deps.logger.info(`apply ${outcome}`, { proxy: name, messageId: message.id });
      if (outcome === 'created' || outcome === 'updated') {
        await deps.proxies.addEvent(
          name,
          {
            at: new Date(now()).toISOString(),
            type: 'Normal',
            reason: outcome === 'created' ? 'Accepted' : 'Updated',
            message: `request ${message.id} applied`,
          },
          deps.maxEvents,
        );
      }
      if (outcome !== 'stale') await kickChecks(deps.bus, [name]);
      return outcome;
    }
    const outcome = await deps.proxies.requestDelete(name, message.publishTime, now());
    deps.logger.info(`delete ${outcome}`, { proxy: name, messageId: message.id });
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
    if (outcome === 'marked' || outcome === 'already') await kickChecks(deps.bus, [name]);
    return outcome;
  } catch (err) {
    if (err instanceof ValidationError) {
      await reject(deps, message, err, now());
      return 'rejected';
    }
    throw err;
  }
}

async function reject(deps: RequestDeps, message: BusMessage, err: EgressError, now: number): Promise<void> {
  const info = err.toInfo();
  deps.logger.warn('request rejected', { messageId: message.id, field: info.field, reason: info.message });
  await deps.proxies.reject(message.id, info, message.text, PROXY_REQUESTS_TOPIC, now);
}
