/** Proxy requests from untrusted JSON: the discriminated union on `action` and the claimed action. */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { parseProxyRequest } from './proxy.js';

const APPLY = {
  apiVersion: 'egress.dev/v1',
  kind: 'Proxy',
  action: 'apply',
  metadata: { name: 'eu-1' },
  spec: { provider: 'local' },
};

describe('parseProxyRequest: one discriminated union on action', () => {
  it.each([
    ['an unknown action', { ...APPLY, action: 'remove' }, 'action', 'must be "apply" or "delete"'],
    ['no action', { ...APPLY, action: undefined }, 'action', 'must be "apply" or "delete"'],
    ['an action that is not a string', { ...APPLY, action: 7 }, 'action', 'must be "apply" or "delete"'],
    ['a bad port in an apply', { ...APPLY, spec: { provider: 'local', port: 'x' } }, 'spec.port', undefined],
    [
      'a bad name in a delete',
      { ...APPLY, action: 'delete', metadata: { name: 'Not_A_Label' } },
      'metadata.name',
      undefined,
    ],
    ['a wrong kind', { ...APPLY, kind: 'Pod' }, 'kind', 'must be "Proxy"'],
    ['a number', 7, '(message)', 'must be a JSON object'],
    ['an array', [APPLY], '(message)', 'must be a JSON object'],
  ])('refuses %s naming the field', (_, input, field, reason) => {
    const refused = expect(() => parseProxyRequest(input));
    refused.toThrow(ValidationError);
    refused.toThrow(expect.objectContaining({ field, ...(reason ? { reason } : {}) }));
  });

  it('types each branch by its action', () => {
    expect(parseProxyRequest(APPLY)).toMatchObject({ action: 'apply', spec: { provider: 'local', port: 0 } });
    expect(parseProxyRequest({ ...APPLY, action: 'delete', spec: undefined })).toMatchObject({ action: 'delete' });
  });
});

describe('a malformed delete', () => {
  it('is refused naming its field', () => {
    const message = { ...APPLY, action: 'delete', metadata: 7 };
    expect(() => parseProxyRequest(message)).toThrow(expect.objectContaining({ field: 'metadata' }));
  });
});
