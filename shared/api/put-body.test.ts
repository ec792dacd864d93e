/** The PUT /v1/proxies/{name} body: parsed, never cast, and refused naming the field. */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { parsePutBody } from './put-body.js';

const BODY = { apiVersion: 'egress.dev/v1', kind: 'Proxy', spec: { provider: 'local' } };

describe('parsePutBody', () => {
  it.each([
    ['a string', 'eu-1', '(body)', 'must be a JSON object (a Proxy)'],
    ['an array', [BODY], '(body)', 'must be a JSON object (a Proxy)'],
    ['an action', { ...BODY, action: 'delete' }, 'action', 'is set by the method: PUT applies, DELETE deletes'],
    ['a null action', { ...BODY, action: null }, 'action', 'is set by the method: PUT applies, DELETE deletes'],
    ['metadata that is a string', { ...BODY, metadata: 'eu-1' }, 'metadata', 'must be an object'],
    ['metadata that is an array', { ...BODY, metadata: ['eu-1'] }, 'metadata', 'must be an object'],
    [
      'another name',
      { ...BODY, metadata: { name: 'eu-2' } },
      'metadata.name',
      'must equal the name in the path ("eu-1")',
    ],
    [
      'a pool label',
      { ...BODY, metadata: { labels: { 'egress.dev/pool': 'p' } } },
      'metadata.labels.egress.dev/pool',
      undefined,
    ],
    ['a bad spec', { ...BODY, spec: { provider: 'local', port: -1 } }, 'spec.port', undefined],
  ])('refuses %s naming the field', (_, body, field, reason) => {
    const refused = expect(() => parsePutBody('eu-1', body));
    refused.toThrow(ValidationError);
    refused.toThrow(expect.objectContaining({ field, ...(reason ? { reason } : {}) }));
  });

  it('completes the body into an apply request named by the path', () => {
    expect(parsePutBody('eu-1', { ...BODY, metadata: { labels: { team: 'a' } } })).toMatchObject({
      action: 'apply',
      metadata: { name: 'eu-1', labels: { team: 'a' } },
      spec: { provider: 'local', port: 0 },
    });
  });
});
