/** Compute failures → typed errors, by HTTP status, `reason` and operation `code` fields (table-driven). */
import { describe, expect, it } from 'vitest';
import { decodeFailure, fieldOfLocation, operationError, typedError, type ApiFailure } from './errors.js';

/** What gax 5 + gaxios 7 throw in REST mode for an HTTP error: the status, and the body as text. */
const httpError = (status: number, reason: string, message = 'm') =>
  Object.assign(
    new Error(JSON.stringify({ error: { code: status, message, errors: [{ message, domain: 'global', reason }] } })),
    {
      status,
      code: status,
    },
  );

describe('decodeFailure', () => {
  it('reads the status and the reasons of the error document', () => {
    expect(decodeFailure(httpError(403, 'quotaExceeded', 'Quota exceeded'))).toEqual({
      status: 403,
      reasons: ['quotaExceeded'],
      message: 'Quota exceeded',
    });
  });

  it('takes ErrorInfo reasons from details too', () => {
    const body = {
      error: {
        code: 429,
        message: 'x',
        details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'RATE_LIMIT_EXCEEDED' }],
      },
    };
    expect(decodeFailure(Object.assign(new Error(JSON.stringify(body)), { status: 429 })).reasons).toEqual([
      'RATE_LIMIT_EXCEEDED',
    ]);
  });

  it.each([
    [Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'ECONNREFUSED'],
    [
      Object.assign(new Error('fetch failed'), { cause: Object.assign(new Error('x'), { code: 'ECONNRESET' }) }),
      'ECONNRESET',
    ],
    [
      Object.assign(new Error('The operation was aborted.'), {
        cause: Object.assign(new Error('a'), { name: 'AbortError' }),
      }),
      'timeout',
    ],
    [Object.assign(new Error('deadline'), { code: 4 }), 'timeout'],
  ])('a call that got no answer is a network failure (%s)', (err, network) => {
    expect(decodeFailure(err).network).toBe(network);
  });

  it.each([
    [
      "Invalid value for field 'resource.networkInterfaces[0].subnetwork': 'regions/us-central1/subnetworks/x'. The referenced subnetwork resource cannot be found.",
      'resource.networkInterfaces[0].subnetwork',
      'spec.placement.subnetwork',
    ],
    [
      "Invalid value for field 'resource.networkInterfaces[0].network': 'global/networks/default'. The referenced network resource cannot be found.",
      'resource.networkInterfaces[0].network',
      'spec.placement.network',
    ],
    [
      "Invalid value for field 'resource.networkInterfaces[0]': ''. Subnetwork should be specified for custom subnetmode network",
      'resource.networkInterfaces[0]',
      'spec.placement.network',
    ],
    ["Invalid value for field 'resource.labels': 'x'. Bad label.", 'resource.labels', undefined],
  ])('a 400 names its request field, and the Permanent error the placement key (%#)', (message, field, key) => {
    const failure = decodeFailure(httpError(400, 'invalid', message));
    expect(failure.field).toBe(field);
    expect(typedError(failure, 'insert', 'p').toInfo()).toMatchObject({ code: 'Permanent', field: key });
  });

  it('a body that is not an error document still gives the status', () => {
    expect(decodeFailure(Object.assign(new Error('<html>bad gateway</html>'), { status: 502 }))).toMatchObject({
      status: 502,
      reasons: [],
    });
  });
});

describe('typedError', () => {
  const cases: [string, ApiFailure, string][] = [
    ['403 quotaExceeded', { status: 403, reasons: ['quotaExceeded'], message: 'q' }, 'QuotaExceeded'],
    [
      '403 rateLimitExceeded (a request rate)',
      { status: 403, reasons: ['rateLimitExceeded'], message: 'r' },
      'Retryable',
    ],
    ['429 without reason', { status: 429, reasons: [], message: 'r' }, 'Retryable'],
    ['429 RESOURCE_EXHAUSTED', { status: 429, reasons: ['RESOURCE_EXHAUSTED'], message: 'r' }, 'QuotaExceeded'],
    ['412 conditionNotMet (org policy)', { status: 412, reasons: ['conditionNotMet'], message: 'c' }, 'Permanent'],
    ['403 accessNotConfigured', { status: 403, reasons: ['accessNotConfigured'], message: 'd' }, 'Retryable'],
    ['403 forbidden', { status: 403, reasons: ['forbidden'], message: 'f' }, 'Retryable'],
    ['401', { status: 401, reasons: ['authError'], message: 'a' }, 'Retryable'],
    ['400 invalid', { status: 400, reasons: ['invalid'], message: 'i' }, 'Permanent'],
    ['404 notFound (an image)', { status: 404, reasons: ['notFound'], message: 'n' }, 'Permanent'],
    ['400 resourceNotReady', { status: 400, reasons: ['resourceNotReady'], message: 'n' }, 'Retryable'],
    ['503 backendError', { status: 503, reasons: ['backendError'], message: 'b' }, 'Retryable'],
    ['500', { status: 500, reasons: [], message: 'i' }, 'Retryable'],
    ['no answer', { reasons: [], message: 'x', network: 'ECONNREFUSED' }, 'Retryable'],
  ];
  it.each(cases)('%s → %s', (_what, failure, code) => {
    expect(typedError(failure, 'insert of instance x', 'compute.instances.create').code).toBe(code);
  });

  it('names the permission that was denied, and never decides on message text', () => {
    const denied = typedError(
      { status: 403, reasons: ['forbidden'], message: 'quota' },
      'zones.get',
      'compute.zones.get',
    );
    expect(denied.code).toBe('Retryable');
    expect(denied.message).toContain('permission compute.zones.get denied');
  });
});

describe('operationError', () => {
  it.each([
    ['ZONE_RESOURCE_POOL_EXHAUSTED', 'QuotaExceeded'],
    ['ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS', 'QuotaExceeded'],
    ['QUOTA_EXCEEDED', 'QuotaExceeded'],
    ['RESOURCE_OPERATION_RATE_EXCEEDED', 'QuotaExceeded'],
    ['INVALID_FIELD_VALUE', 'Permanent'],
    ['RESOURCE_NOT_FOUND', 'Permanent'],
    ['CONDITION_NOT_MET', 'Permanent'],
    ['INTERNAL_ERROR', 'Retryable'],
  ])('%s → %s', (code, expected) => {
    expect(operationError({ errors: [{ code, message: 'm' }] }, 'insert').code).toBe(expected);
  });

  it('a permanent error names the placement field its location points at', () => {
    const e = operationError(
      { errors: [{ code: 'INVALID_FIELD_VALUE', message: 'm', location: 'resource.machineType' }] },
      'insert',
    );
    expect(e.toInfo()).toMatchObject({ code: 'Permanent', field: 'spec.placement.machineType' });
  });

  it('without error codes, the HTTP status decides', () => {
    expect(operationError({ errors: [], httpErrorStatusCode: 403 }, 'insert').code).toBe('Retryable');
  });

  it.each([
    ['zone', 'spec.placement.zone'],
    ['resource.disks[0].initializeParams.sourceImage', 'spec.placement.image'],
    ['resource.networkInterfaces[0].subnetwork', 'spec.placement.subnetwork'],
    ['resource.name', undefined],
  ])('location %s → %s', (location, field) => {
    expect(fieldOfLocation(location)).toBe(field);
  });
});
