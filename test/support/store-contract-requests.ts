/** What the store contract's cases write: proxy and pool applies at its time origin `T`, and a report policy. */
import type { PoolApplyRequest } from '../../shared/domain/pool.js';
import type { ApplyRequest } from '../../shared/domain/proxy.js';
import type { ReportInput } from '../../shared/store/report-rules.js';

/** The contract's time origin: publish and report times are `T` plus a few milliseconds. */
export const T = Date.UTC(2026, 5, 1);

/** An apply of proxy `name` on provider `local`. */
export const proxyRequest = (name: string, port = 0, labels: Record<string, string> = {}): ApplyRequest => ({
  apiVersion: 'egress.dev/v1',
  kind: 'Proxy',
  action: 'apply',
  metadata: { name, labels },
  spec: { provider: 'local', placement: {}, port },
});

/** An apply of pool `name`, its members `team: crawl` proxies on provider `local`. */
export const poolRequest = (name: string, replicas = 1, labels: Record<string, string> = {}): PoolApplyRequest => ({
  apiVersion: 'egress.dev/v1',
  kind: 'ProxyPool',
  action: 'apply',
  metadata: { name, labels },
  spec: {
    replicas,
    maxSurge: 1,
    template: { metadata: { labels: { team: 'crawl' } }, spec: { provider: 'local', placement: {}, port: 0 } },
  },
});

/** A report policy tight enough to reach its limits in a few reports: 2 a minute, 1 ban an hour per caller. */
export const REPORT_POLICY: ReportInput['policy'] = {
  excludeMs: 600_000,
  banTargets: 3,
  banWindowMs: 3_600_000,
  perCallerPerMinute: 2,
  bansPerCallerPerHour: 1,
};
