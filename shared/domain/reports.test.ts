/** Table tests for the report rules: targets, exclusions, bans and stale reports. */
import { describe, expect, it } from 'vitest';
import { banApplies, countReport, coversDomain, excludedFor, normaliseTarget, type ReportTally } from './reports.js';

const NOW = Date.parse('2026-12-01T12:00:00Z');
const policy = { excludeMs: 600_000, banTargets: 2, banWindowMs: 3_600_000 };
const instance = { createdAt: NOW - 60_000, egressIp: '127.1.0.4' };

describe('targets', () => {
  it.each([
    ['Example.COM.', 'example.com'],
    ['  www.example.com ', 'www.example.com'],
    ['10.0.0.1', '10.0.0.1'],
    ['::1', '::1'],
    ['https://example.com', undefined],
    ['example.com:443', undefined],
    ['example.com/x', undefined],
    ['-bad.example', undefined],
    ['', undefined],
  ])('%j normalises to %j', (raw, want) => expect(normaliseTarget(raw)).toBe(want));

  it.each([
    ['example.com', 'example.com', true],
    ['example.com', 'www.example.com', true],
    ['example.com', 'a.b.example.com', true],
    ['example.com', 'notexample.com', false],
    ['www.example.com', 'example.com', false],
    ['10.0.0.1', '10.0.0.1', true],
    ['0.0.1', '10.0.0.1', false],
  ])('a report for %s covers %s: %s', (target, domain, want) => expect(coversDomain(target, domain)).toBe(want));
});

describe('countReport', () => {
  it('counts by reason and keeps a targeted report in force for excludeMs', () => {
    const one = countReport({}, { reason: 'blocked', target: 'example.com' }, NOW, instance, NOW, policy);
    expect(one).toMatchObject({ banned: false, stale: false, reports: { banned: 0, blocked: 1, error: 0 } });
    expect(excludedFor(one.reports, 'www.example.com', instance.createdAt, NOW + 599_000)).toBe(true);
    expect(excludedFor(one.reports, 'www.example.com', instance.createdAt, NOW + 600_000)).toBe(false);
    expect(excludedFor(one.reports, 'example.org', instance.createdAt, NOW)).toBe(false);
    // A new instance (a new egress IP) is not excluded by what was reported against the old one.
    expect(excludedFor(one.reports, 'example.com', NOW + 1, NOW + 2)).toBe(false);
  });

  it('banned without a target bans the current instance once; its replacement is not banned', () => {
    const first = countReport({}, { reason: 'banned' }, NOW - 1000, instance, NOW, policy);
    expect(first).toMatchObject({
      banned: true,
      ban: { reason: 'reported banned', targets: [], egressIp: '127.1.0.4' },
    });
    expect(banApplies(first.ban, instance.createdAt)).toBe(true);
    expect(banApplies(first.ban, NOW)).toBe(false);
    const again = countReport(first, { reason: 'banned' }, NOW, instance, NOW, policy);
    expect(again).toMatchObject({ banned: false, ban: first.ban, reports: { banned: 2 } });
  });

  it('a report observed before the current instance, or with no instance up, counts but bans nothing', () => {
    const late = countReport({}, { reason: 'banned' }, instance.createdAt - 1, instance, NOW, policy);
    expect(late).toMatchObject({ banned: false, stale: true, ban: undefined, reports: { banned: 1 } });
    const none = countReport({}, { reason: 'banned', target: 'a.example' }, NOW, undefined, NOW, policy);
    expect(none).toMatchObject({ banned: false, stale: true, reports: { banned: 1, targets: [] } });
  });

  it('banTargets distinct targets within the window ban; the same target twice or an old one does not', () => {
    let state: { reports?: ReportTally } = {};
    const send = (target: string, at: number) => {
      const out = countReport(state, { reason: 'banned', target }, at, instance, NOW, policy);
      state = out;
      return out;
    };
    expect(send('a.example', NOW - 4_000_000 + 3_999_000).banned).toBe(false);
    expect(send('a.example', NOW).banned).toBe(false);
    expect(send('b.example', NOW)).toMatchObject({
      banned: true,
      ban: { targets: ['a.example', 'b.example'], reason: 'banned by 2 targets within 60m' },
    });
    const outside = countReport(
      { reports: { banned: 1, blocked: 0, error: 0, lastAt: '', targets: [] } },
      { reason: 'banned', target: 'c.example' },
      NOW,
      instance,
      NOW,
      policy,
    );
    expect(outside.banned).toBe(false);
  });

  it('keeps at most 100 targets, the newest', () => {
    let reports: ReportTally | undefined;
    for (let i = 0; i < 120; i++) {
      reports = countReport(
        { reports },
        { reason: 'error', target: `t${i}.example` },
        NOW - 120 + i,
        instance,
        NOW,
        policy,
      ).reports;
    }
    expect(reports?.targets).toHaveLength(100);
    expect(reports?.targets[0]?.domain).toBe('t20.example');
  });
});
