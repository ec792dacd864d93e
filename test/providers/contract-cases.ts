/**
 * The conformance cases of the provider contract, keyed by the rule each checks
 * (`shared/providers/contract-rules.ts#CONTRACT_RULES`), and the MUST rules no case can check on a
 * built provider, each with the reason. `test/docs/contract-rules.test.ts` fails when a MUST rule
 * has neither; `test/providers/contract.case.ts#runProviderContract` runs every case.
 */
import type { ContractRuleId } from '../../shared/providers/contract-rules.js';

/**
 * Each case's description, in the order the suite runs them: `concurrent-safe` keeps its
 * instances running for `delete-idempotent`, `report-until-gone` and `dead-is-stopped`, which end one each.
 */
export const CONTRACT_CASES = {
  'created-at-nonzero': 'create reaches Running with a non-zero createdAt',
  'carries-identity': 'the instance carries spec.name, proxy, installationId and specHash back',
  'create-adopts': 'a duplicate create adopts the instance',
  'reachable-with-credentials': 'the instance is reachable through the proxy with its credentials, and refuses without',
  'remote-health': 'a Running instance of a provider that probes remotely carries health',
  'not-found-certain': 'get of an unknown instance throws NotFound',
  'list-own-complete': 'list returns only this installation’s instances',
  'list-since-vouch': 'listSince returns the whole listing, then what changed: a new instance, a removed one',
  'placement-deterministic': 'resolvePlacement gives the same answer each time and changes nothing',
  'placement-field': 'an invalid placement is refused naming the field',
  'typed-errors': 'a refused placement is a typed Permanent or Validation error',
  'async-failure-failed': 'a create that fails after it returned is reported Failed with the error',
  'concurrent-safe': 'concurrent creates of different names all run',
  'delete-idempotent': 'delete is idempotent and get then throws NotFound',
  'report-until-gone': 'get reports a deleted instance until its proxy no longer serves',
  'dead-is-stopped': 'an instance that dies is reported Stopped or Terminated',
} as const satisfies Partial<Record<ContractRuleId, string>>;

/** A rule with a conformance case. */
export type ContractTest = keyof typeof CONTRACT_CASES;

/** MUST rules checked elsewhere than on a built provider, and where. */
export const CONTRACT_EXEMPTIONS: Partial<Record<ContractRuleId, string>> = {
  'name-dns-label':
    'names are refused before a provider is built (shared/config/schema.ts, test/guarantees/fuzz-config.test.ts), and spec.provider changes by the API (shared/api/handler.ts, test/integration/requests.test.ts)',
};

/** The suite's name for a case: `<rule id>: <description>`, so a filter (`-t list-since-vouch`) finds it. */
export const caseName = (id: ContractTest): string => `${id}: ${CONTRACT_CASES[id]}`;
