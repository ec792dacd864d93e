/**
 * The `static` provider (functions side): its instances are entries of a configured list of proxy
 * endpoints (a vendor's host:port with per-session usernames, or servers you run). `create` claims
 * a free endpoint, `delete` releases it; the claim is a Firestore document per endpoint, taken in a
 * transaction (`shared/store/firestore/static-claims.ts`), so two creates never hold one endpoint, whichever
 * function instances run them. The check function probes the endpoints as it probes VMs.
 */
import { connect } from 'node:net';
import { NotFoundError, QuotaExceededError, ValidationError } from '../../errors.js';
import type { StaticClaimRepository } from '../../store/ports.js';
import type { StaticClaim } from '../../store/records.js';
import { firestoreCall } from '../../telemetry/spans.js';
import type { Instance, InstanceSpec, Provider, ProviderHealth } from '../contract.js';
import type { ProviderFactoryDeps } from '../factory.js';
import {
  claimId,
  endpointKey,
  parseStaticOptions,
  parseStaticPlacement,
  selects,
  type StaticOptions,
} from './options.js';

/** What the factory takes from the registry's {@link ProviderFactoryDeps}. */
export type StaticProviderDeps = Pick<ProviderFactoryDeps, 'provider' | 'path' | 'now' | 'claims'> & {
  config: Pick<ProviderFactoryDeps['config'], 'installationId'>;
};

class StaticProvider implements Provider {
  readonly name: string;
  readonly type = 'static';
  readonly probesRemotely = false;
  private readonly now: () => number;

  constructor(
    private readonly options: StaticOptions,
    private readonly claims: StaticClaimRepository,
    private readonly deps: StaticProviderDeps,
  ) {
    this.name = deps.provider.name;
    this.now = deps.now ?? Date.now;
  }

  resolvePlacement(placement: Record<string, unknown>): Record<string, unknown> {
    return parseStaticPlacement(placement, this.options.endpoints);
  }

  /** The placement's country, else the one country all its endpoints share, else the provider's. */
  expectedCountry(placement: Record<string, unknown>): string | undefined {
    if (typeof placement['country'] === 'string') return placement['country'];
    const countries = new Set(this.selected(placement).map((e) => e.country));
    const [only] = countries;
    return countries.size === 1 && only !== undefined ? only : this.deps.provider.country;
  }

  async create(spec: InstanceSpec): Promise<Instance> {
    const candidates = this.selected(spec.placement).map((e) => ({
      id: claimId(this.name, e),
      key: endpointKey(e),
      host: e.host,
      port: e.port,
      credentials: e.username !== undefined ? { username: e.username, password: e.password ?? '' } : undefined,
    }));
    if (candidates.length === 0)
      throw new ValidationError('spec.placement', `matches none of the ${this.options.endpoints.length} endpoints`);
    const outcome = await this.firestore('claim', () =>
      this.claims.claim({
        provider: this.name,
        instance: spec.name,
        proxy: spec.proxy,
        installationId: spec.installationId,
        specHash: spec.specHash,
        candidates,
        cooldownMs: this.options.releaseCooldownSeconds * 1000,
        now: this.now(),
      }),
    );
    if (!outcome.claimed) {
      const resting =
        outcome.cooling > 0
          ? `, ${outcome.cooling} resting after release until ${new Date(outcome.nextFreeAt ?? 0).toISOString()}`
          : '';
      throw new QuotaExceededError(
        `provider "${this.name}": no free endpoint for this placement (${outcome.taken} of ${candidates.length} claimed${resting})`,
      );
    }
    return this.instanceOf(outcome.claimed);
  }

  async get(name: string): Promise<Instance> {
    const claim = await this.firestore('held', () => this.claims.held(this.name, name));
    if (!claim) throw new NotFoundError(`instance ${name} holds no endpoint of provider ${this.name}`);
    const instance = this.instanceOf(claim);
    // The endpoint is not ours to run: one that stops accepting connections is reported Stopped
    // (rule dead-is-stopped), and its proxy is replaced on another endpoint.
    const reachable = await accepts(instance.ip, instance.port, this.options.connectTimeoutSeconds * 1000);
    return reachable ? instance : { ...instance, state: 'Stopped' };
  }

  async delete(name: string): Promise<void> {
    await this.firestore('release', () => this.claims.release(this.name, name, this.now()));
  }

  async list(): Promise<Instance[]> {
    const claims = await this.firestore('all', () => this.claims.all(this.name));
    return claims
      .filter((c) => c.instance !== undefined && c.installationId === this.deps.config.installationId)
      .map((c) => this.instanceOf(c));
  }

  async check(): Promise<ProviderHealth> {
    const started = this.now();
    const claims = await this.firestore('all', () => this.claims.all(this.name));
    const held = claims.filter((c) => c.instance !== undefined).length;
    const total = this.options.endpoints.length;
    return { ok: true, message: `${held} of ${total} endpoints claimed`, latencyMs: this.now() - started };
  }

  /** The configured endpoints a placement selects, in config order. */
  private selected(placement: Record<string, unknown>) {
    const p = parseStaticPlacement(placement, this.options.endpoints);
    return this.options.endpoints.filter((e) => selects(p, e));
  }

  private instanceOf(c: StaticClaim): Instance {
    return {
      name: c.instance ?? '',
      proxy: c.proxy ?? '',
      installationId: c.installationId ?? '',
      specHash: c.specHash ?? '',
      state: 'Running',
      ip: c.host,
      port: c.port,
      createdAt: c.claimedAt ?? 0,
    };
  }

  /** One claim-store call as a child span (`firestore.claim staticClaims`). */
  private firestore<T>(operation: string, call: () => Promise<T>): Promise<T> {
    return firestoreCall(operation, 'staticClaims', call);
  }
}

/** Whether `host:port` accepts a TCP connection within `timeoutMs`. */
function accepts(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}

/**
 * Builds the provider for a `static` config entry.
 *
 * @throws ValidationError naming `<path>.options.<field>` when the endpoints are invalid, or when
 *   the registry was built without the claim store
 */
export function createStaticProvider(deps: StaticProviderDeps): Provider {
  const options = parseStaticOptions(deps.provider.options, deps.path);
  if (!deps.claims)
    throw new ValidationError(
      deps.path,
      'a static provider needs the claim store (staticClaims), which this process lacks',
    );
  return new StaticProvider(options, deps.claims, deps);
}
