/** Trust on first use of a TLS listener: learnt once per instance, then pinned; another certificate fails the probe. */
import { describe, expect, it } from 'vitest';
import type { Health, ProxyStatus } from '../domain/status.js';
import type { Instance } from '../providers/contract.js';
import { fingerprintToKeep, judgeAgainstPin, pinnedFingerprint, tlsCondition } from './tls-pin.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const CREATED = Date.parse('2026-12-06T10:00:00.000Z');

const health = (over: Partial<Health> = {}): Health => ({
  lastProbeAt: '2026-12-06T10:01:00.000Z',
  ok: true,
  consecutiveFailures: 0,
  egressIp: '203.0.113.7',
  ...over,
});
const instance = (over: Partial<Instance> = {}): Instance => ({
  name: 'i-1',
  proxy: 'p',
  installationId: 'x',
  specHash: 'h',
  state: 'Running',
  ip: '203.0.113.7',
  port: 3128,
  tlsPort: 3129,
  createdAt: CREATED,
  ...over,
});
const stored = (over: Partial<NonNullable<ProxyStatus['instance']>> = {}): ProxyStatus['instance'] => ({
  name: 'i-1',
  ip: '203.0.113.7',
  port: 3128,
  state: 'Running',
  createdAt: new Date(CREATED).toISOString(),
  specHash: 'h',
  tlsPort: 3129,
  tlsFingerprint: A,
  ...over,
});

describe('TLS pin', () => {
  it.each([
    ['the same incarnation', stored(), A],
    ['a replacement (another createdAt)', stored({ createdAt: '2026-12-06T09:00:00.000Z' }), undefined],
    ['another instance name', stored({ name: 'i-0' }), undefined],
    ['nothing stored', undefined, undefined],
  ])('is the stored fingerprint only for %s', (_, s, expected) => {
    expect(pinnedFingerprint(s, instance())).toBe(expected);
  });

  it('is learnt from the first probe that passed, never from a failed one', () => {
    expect(fingerprintToKeep(instance({ health: health({ tlsFingerprint: A }) }), undefined)).toBe(A);
    expect(fingerprintToKeep(instance({ health: health({ ok: false, tlsFingerprint: A }) }), undefined)).toBe(
      undefined,
    );
    expect(fingerprintToKeep(instance({ health: health({ tlsFingerprint: B }) }), A)).toBe(A);
  });

  it('fails a passed probe that met another certificate, counting on from the stored failures', () => {
    const judged = judgeAgainstPin(instance({ health: health({ tlsFingerprint: B }) }), A, 1);
    expect(judged.health).toMatchObject({ ok: false, consecutiveFailures: 2, tlsFingerprint: B });
    expect(judged.health?.error).toBe(`TLS certificate changed: pinned sha256 ${A}, presented ${B}`);
    expect(judged.health?.egressIp).toBeUndefined();
    const same = instance({ health: health({ tlsFingerprint: A }) });
    expect(judgeAgainstPin(same, A, 1)).toBe(same);
  });

  it.each([
    ['pinned and met again', A, health({ tlsFingerprint: A }), 'True', 'Pinned'],
    ['learnt now', undefined, health({ tlsFingerprint: A }), 'True', 'Pinned'],
    ['another certificate', A, health({ ok: false, tlsFingerprint: B }), 'False', 'Changed'],
    ['not probed yet', undefined, undefined, 'Unknown', 'NotProbed'],
  ] as const)('TlsPinned condition: %s', (_, pinned, h, status, reason) => {
    expect(tlsCondition(instance({ health: h }), pinned)).toMatchObject({ status, reason });
  });

  it('has no TlsPinned condition without a TLS listener', () => {
    expect(tlsCondition(instance({ tlsPort: undefined }), undefined)).toBeUndefined();
  });
});
