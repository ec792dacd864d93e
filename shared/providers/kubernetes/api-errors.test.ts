/**
 * API failures by HTTP status and Status reason/details, and Pod fields to our fields. A 403 on
 * create is the one case the message decides: RBAC and every admission plugin answer reason Forbidden.
 */
import { describe, expect, it } from 'vitest';
import { KubeApiError, kubeApiError, podFieldOf, toEgressError, type ApiCall } from './api-errors.js';

const OPTIONS = 'config.providers.0.options';
const create: ApiCall = {
  verb: 'create',
  resource: 'pods',
  namespace: 'egress',
  name: 'ep-1',
  fieldOf: (f) => podFieldOf(f, OPTIONS),
};
const get: ApiCall = { verb: 'get', resource: 'pods', namespace: 'egress', name: 'ep-1' };
const status = (
  code: number,
  reason: string,
  details: Record<string, unknown> = {},
  message = 'whatever the server says',
) =>
  kubeApiError(
    code,
    JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message, details }),
  );

describe('toEgressError', () => {
  it.each([
    ['404 on get', status(404, 'NotFound'), get, 'NotFound', undefined],
    [
      '404 namespaces on create',
      status(404, 'NotFound', { name: 'egress', kind: 'namespaces' }),
      create,
      'Permanent',
      'spec.placement.namespace',
    ],
    [
      '403 on create (ResourceQuota)',
      status(403, 'Forbidden', { kind: 'pods' }, 'pods "ep-1" is forbidden: exceeded quota: q, requested: pods=1'),
      create,
      'QuotaExceeded',
      undefined,
    ],
    [
      '403 on create (PodSecurity, hostPort)',
      status(
        403,
        'Forbidden',
        { kind: 'pods' },
        'pods "ep-1" is forbidden: violates PodSecurity "baseline:latest": hostPort (container "proxy" uses hostPort 8888)',
      ),
      create,
      'Permanent',
      'spec.placement.hostPort',
    ],
    [
      '403 on create (LimitRanger)',
      status(
        403,
        'Forbidden',
        { kind: 'pods' },
        'pods "ep-1" is forbidden: maximum cpu usage per Container is 100m, but limit is 500m',
      ),
      create,
      'Permanent',
      `${OPTIONS}.resources`,
    ],
    [
      '403 on create (terminating namespace)',
      status(403, 'Forbidden', {
        causes: [{ reason: 'NamespaceTerminating', field: 'metadata.namespace', message: 'm' }],
      }),
      create,
      'Retryable',
      undefined,
    ],
    ['403 on create (RBAC)', status(403, 'Forbidden', { kind: 'pods' }), create, 'Retryable', undefined],
    ['403 on get (RBAC)', status(403, 'Forbidden', { kind: 'pods' }), get, 'Retryable', undefined],
    ['401', kubeApiError(401, undefined), get, 'Retryable', undefined],
    [
      '422 Invalid nodeSelector',
      status(422, 'Invalid', { causes: [{ field: 'spec.nodeSelector', reason: 'FieldValueInvalid', message: 'bad' }] }),
      create,
      'Permanent',
      'spec.placement.nodeSelector',
    ],
    [
      '422 Invalid image',
      status(422, 'Invalid', { causes: [{ field: 'spec.containers[0].image', message: 'Required value' }] }),
      create,
      'Permanent',
      `${OPTIONS}.image`,
    ],
    ['409 Conflict', status(409, 'Conflict'), create, 'Retryable', undefined],
    ['429', status(429, 'TooManyRequests', { retryAfterSeconds: 3 }), get, 'Retryable', undefined],
    ['500', status(500, 'InternalError'), get, 'Retryable', undefined],
    ['not JSON', kubeApiError(502, '<html>bad gateway</html>'), get, 'Retryable', undefined],
    ['a network error', new Error('connect ECONNREFUSED'), get, 'Retryable', undefined],
  ])('%s → %s', (_what, err, call, code, field) => {
    const e = toEgressError(err, call).toInfo();
    expect(e.code).toBe(code);
    expect(e.field).toBe(field);
  });

  it('decides by fields, not by text: a quota message on a 404 is still NotFound', () => {
    const e = toEgressError(status(404, 'NotFound', {}, 'exceeded quota: egress'), get);
    expect(e.code).toBe('NotFound');
  });

  it('keeps the retry hint of a 429 and a 503', () => {
    expect(toEgressError(status(429, 'TooManyRequests', { retryAfterSeconds: 3 }), get).toInfo().retryAfterMs).toBe(
      3000,
    );
    expect(toEgressError(status(503, 'ServiceUnavailable', { retryAfterSeconds: 1 }), get).toInfo().retryAfterMs).toBe(
      1000,
    );
  });

  it('AlreadyExists is recognised by reason, a write Conflict is not', () => {
    expect(status(409, 'AlreadyExists').alreadyExists).toBe(true);
    expect(status(409, 'Conflict').alreadyExists).toBe(false);
    expect(new KubeApiError(409, {}).alreadyExists).toBe(false);
  });
});

describe('podFieldOf', () => {
  it.each([
    ['spec.tolerations[0].operator', 'spec.placement.tolerations'],
    ['spec.hostNetwork', 'spec.placement.hostNetwork'],
    ['spec.containers[0].ports[0].hostPort', 'spec.placement.hostPort'],
    ['spec.containers[0].ports[0].containerPort', 'spec.port'],
    ['metadata.namespace', 'spec.placement.namespace'],
    ['spec.containers[0].resources.limits', `${OPTIONS}.resources`],
    ['metadata.labels', 'pod.metadata.labels'],
  ])('%s → %s', (kubeField, field) => {
    expect(podFieldOf(kubeField, OPTIONS)).toBe(field);
  });
});
