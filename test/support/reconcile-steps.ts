/** Steps the reconcile tests share: an apply request, and checks run until a phase holds. */
import { expect } from 'vitest';
import type { ApplyRequest } from '../../shared/domain/proxy.js';
import { runCheck, type CheckDeps } from '../../shared/reconcile/check.js';
import { eventually } from './eventually.js';

/** An apply request for `name` on `provider` with an empty placement. */
export const applyRequest = (name: string, provider: string, port = 0): ApplyRequest => ({
  apiVersion: 'egress.dev/v1',
  kind: 'Proxy',
  action: 'apply',
  metadata: { name, labels: {} },
  spec: { provider, placement: {}, port },
});

/** Runs checks for `name` (as kicks and redeliveries would) until `until` holds of its phase. */
export const settle = (
  deps: CheckDeps,
  name: string,
  until: (phase: string | undefined) => boolean,
  ms = 20_000,
  everyMs = 200,
) =>
  eventually(
    async () => {
      await runCheck(deps, { names: [name] });
      const phase = (await deps.proxies.get(name))?.doc.status.phase;
      expect(until(phase), `phase ${phase}`).toBe(true);
    },
    ms,
    everyMs,
  );
