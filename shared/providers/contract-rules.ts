/**
 * The provider contract's rules, in one place: `docs/providers.md` lists exactly these (checked by
 * `test/docs/contract-rules.test.ts`), and code comments cite them by id (`rule create-adopts`).
 */

/** One rule of the contract: MUST rules are relied on by the reconciler and GC; SHOULD rules by efficiency. */
export interface ContractRule {
  /** Stable kebab-case id, cited in comments and docs as `rule <id>`. */
  readonly id: string;
  readonly level: 'MUST' | 'SHOULD';
  /** The rule as `docs/providers.md` states it (Markdown). */
  readonly text: string;
}

/** Every rule, numbered in order from 1 in the docs table. */
export const CONTRACT_RULES = [
  { id: 'created-at-nonzero', level: 'MUST', text: 'Every instance reports a non-zero `createdAt`' },
  {
    id: 'not-found-certain',
    level: 'MUST',
    text: '`get` throws `NotFoundError` only when the instance certainly does not exist; otherwise `RetryableError`',
  },
  {
    id: 'unreadable-permanent',
    level: 'SHOULD',
    text: 'An unreadable instance is a `PermanentError` from `get`; while deleting, the reconciler then calls `delete` anyway',
  },
  {
    id: 'report-until-gone',
    level: 'MUST',
    text: 'Keep reporting an instance, in any state, until it is really gone: a replacement creates only after NotFound',
  },
  {
    id: 'dead-is-stopped',
    level: 'MUST',
    text: 'A dead instance is reported `Stopped` or `Terminated` (both replace)',
  },
  {
    id: 'delete-idempotent',
    level: 'MUST',
    text: '`delete` is idempotent, called on every deletion poll, treats NotFound as done, and removes owned resources even when the main one is gone',
  },
  {
    id: 'create-adopts',
    level: 'MUST',
    text: '`create` of an existing name adopts it (same instance, same `createdAt`)',
  },
  { id: 'concurrent-safe', level: 'MUST', text: 'Safe for concurrent use' },
  {
    id: 'placement-field',
    level: 'MUST',
    text: "Placement errors name the field: `ValidationError` from `resolvePlacement`, `PermanentError(message, 'spec.placement.<key>')` from `create`",
  },
  {
    id: 'typed-errors',
    level: 'MUST',
    text: 'Quota exhaustion → `QuotaExceededError`; unrecoverable input → `PermanentError`; transient → `RetryableError`; untyped errors count as Retryable',
  },
  {
    id: 'async-failure-failed',
    level: 'MUST',
    text: 'An asynchronous failure is reported as state `Failed` with `error`',
  },
  {
    id: 'reachable-with-credentials',
    level: 'MUST',
    text: "`ip:port` is reachable from clients and `probeIp:port` (else `ip:port`) from the prober, and the proxy requires the spec's credentials (407 without)",
  },
  {
    id: 'list-own-complete',
    level: 'MUST',
    text: "`list` returns only this installation's instances and throws when incomplete",
  },
  {
    id: 'carries-identity',
    level: 'MUST',
    text: 'The instance carries `spec.name`, `proxy`, `installationId` and `specHash` back',
  },
  {
    id: 'placement-deterministic',
    level: 'MUST',
    text: '`resolvePlacement` is deterministic and side-effect free',
  },
  {
    id: 'remote-health',
    level: 'MUST',
    text: 'With `probesRemotely: true`, Running instances carry `health`',
  },
  { id: 'check-cheap', level: 'SHOULD', text: '`check` is cheap (one call or a few)' },
  {
    id: 'name-dns-label',
    level: 'MUST',
    text: 'Provider names are DNS-1123 labels; `spec.provider` is immutable',
  },
  {
    id: 'changes-vouch',
    level: 'SHOULD',
    text: 'A report-fed provider implements `changes` so that an instance it cannot vouch for reads as changed',
  },
  {
    id: 'list-since-vouch',
    level: 'MUST',
    text: '`listSince` returns every instance that may have changed since its cursor (gone ones in `removed`), or the whole listing when it cannot vouch for the rest; it throws when `list` would',
  },
] as const satisfies readonly ContractRule[];

/** A rule's id, as cases and citations key it. */
export type ContractRuleId = (typeof CONTRACT_RULES)[number]['id'];
