/**
 * What the tests need to know about one provider type, in one file per type: how to build the
 * provider against a backend of its own (a wire-level fake, a real relay, a vendor's stand-ins),
 * a placement, where its instances really are, how one dies out of band, and what it is exempt
 * from, with the reason. Three consumers take a kit: the provider contract
 * (`test/providers/contract.case.ts#runProviderContract`), the guarantee suites (through
 * `test/guarantees/support/world.ts#startWorld`) and the provider e2e spec
 * (`test/e2e/providers.test.ts`). `test/kits/registry.ts#KITS` holds one kit per product provider
 * type, so a type without one does not compile.
 *
 * A folder of its own, not `test/support/`: a kit is the per-provider part of three test trees
 * (providers, guarantees, e2e), and the one place a new provider's tests are written.
 */
import type { ProviderType } from '../../shared/config/schema.js';
import type { Phase, ProxyDoc } from '../../shared/domain/status.js';
import type { Instance, InstanceSpec, Provider } from '../../shared/providers/contract.js';
import type { RunningStack } from '../e2e/stack.js';
import type { Ground, GroundOptions } from '../guarantees/support/grounds.js';
import type { ContractTest } from '../providers/contract-cases.js';

/** A consumer a kit does not serve, and why (a kit must say one or the other). */
export interface Absent {
  absent: string;
}

export interface ProviderKit {
  type: ProviderType;
  contract: ContractKit;
  guarantees: GuaranteeKit | Absent;
  e2e: E2eKit | Absent;
}

/** The provider contract: the provider built against the kit's backend, and its exemptions. */
export interface ContractKit {
  setup(): Promise<ContractHarness>;
  /** How long an asynchronous backend may take to converge. */
  timeoutMs?: number;
  /** Cases this provider cannot run, each with the reason (the suite throws on one without). */
  skip?: { reason: string; tests: ContractTest[] }[];
  /** How many instances the concurrency test creates at once (default 5; emulated guests are heavy). */
  concurrentCreates?: number;
  /**
   * Its instances are real qemu guests: the contract runs in the `guests` project
   * (`test/providers/contract-guests.test.ts`), one file at a time, not beside the integration files.
   */
  bootsGuests?: boolean;
}

export interface ContractHarness {
  provider: Provider;
  installationId: string;
  /** A valid placement for this provider. */
  placement: Record<string, unknown>;
  /** A placement this provider refuses, and the field its error must name. */
  invalidPlacement: { placement: Record<string, unknown>; field: string };
  /** Where the echo endpoint listens (default loopback): instances in a test network must reach it. */
  echoHost?: string;
  /** Kills the instance out of band (the process, the VM), to check Stopped/Terminated is reported. */
  kill?(instance: Instance): Promise<void>;
  /**
   * Makes `spec`'s create fail after it returned (rule async-failure-failed): arranges a fault in
   * the backend, or returns the spec with a placement only the backend refuses.
   */
  failLater(spec: InstanceSpec): InstanceSpec | Promise<InstanceSpec>;
  /**
   * The credentials the prober and discovery use for the instance, where they are not the spec's:
   * a `static` endpoint requires its own, which its claim stores as the proxy's.
   */
  credentials?(spec: InstanceSpec, instance: Instance): Promise<InstanceSpec['credentials']>;
  cleanup(): Promise<void>;
}

/** The guarantee suites' world: the backend side of the functions' provider and its ground truth. */
export interface GuaranteeKit {
  start(o: GroundOptions): Promise<Ground>;
  /**
   * The phase a live proxy settles in (`Ground.servingPhase`). One other than `Ready` never stops
   * asking for checks (an Unhealthy proxy asks again every 2 s), so the redelivery suite does not
   * wait for those to end.
   */
  servingPhase: Phase;
  /** Runs each suite's full scenario count (the cheapest world); the others run fewer (the soak runs more). */
  fullCounts: boolean;
}

/**
 * The provider through the functions as a user drives it (`npm start` with the provider's sample
 * config pointed at the kit's backend, its sample proxies published, Ready, then deleted).
 */
export interface E2eKit {
  /** The sample proxies (`docs/samples/<type>.yaml`) and config (`docs/samples/config/<type>.yaml`). */
  samples: string;
  config: string;
  /** The SDK the check function's bundle loads only dynamically, and its name in the test's title. */
  sdk: { pkg: string; title: string };
  /** How the test titles name the instances (`VMs`) and what a delete removes (`the VM (and its proxy)`). */
  instances: string;
  removes: string;
  /** The port a sample without one gets. */
  defaultPort: number;
  readyWithinMs: number;
  start(): Promise<E2eBackend>;
}

export interface E2eBackend {
  /** A sample provider's options pointed at this backend. */
  options(sample: Record<string, unknown>): Record<string, unknown>;
  /** The host clients reach `proxy`'s instance at, or undefined when the backend holds none. */
  host(proxy: string): string | undefined;
  /** What the samples ask of their placement, checked where the instances are. */
  expectPlaced(): void;
  /** The instance of a Ready sample, beyond its address and credentials (labels, egress address, TLS). */
  expectServing(ready: ReadySample): void | Promise<void>;
  /** Nothing of `proxy`'s instance is left in the backend (the VM or Pod, what it owns). */
  expectGone(proxy: string): void;
  /** Once every sample is gone: nothing of them runs anywhere (checked once, not awaited). */
  expectNoneLeft?(): void;
  close(): Promise<void>;
}

/** A sample proxy the stack reports Ready, and where it is. */
export interface ReadySample {
  stack: RunningStack;
  name: string;
  status: ProxyDoc['status'];
  /** Where clients reach it (its address's host). */
  host: string;
  /** The stack's echo server (on loopback). */
  echoPort: number;
  /** A directory of the test's own (for files curl reads). */
  dir: string;
}
