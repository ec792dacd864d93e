/**
 * The relay-backed provider (types `process` and `kvm`): commands go out on `relay-commands`
 * addressed to one relay; observations come from the inventory the relay reports. It never blocks
 * on the backend: `create` and `delete` return once the command is published.
 */
import { randomUUID } from 'node:crypto';
import type { Bus } from '../../bus/pubsub.js';
import type { Config, ProviderConfig } from '../../config/schema.js';
import { NotFoundError, RetryableError, ValidationError } from '../../errors.js';
import type { InventoryItem, RelayCommand } from '../../wire/protocol.js';
import { inventoryMarkSchema, parseJsonAs, type CommandDoc, type RelayDoc } from '../../store/records.js';
import { changedSince } from '../../store/relay-rules.js';
import { recordRelayHeartbeatAge } from '../../telemetry/metrics.js';
import { firestoreCall } from '../../telemetry/spans.js';
import type { Instance, InstanceDelta, InstanceSpec, Provider, ProviderHealth } from '../contract.js';
import { toWire } from '../../wire/command-wire.js';
import { signer, type SigningKey } from '../../wire/signature.js';
import { TOPICS } from '../../bus/topics.js';
import type { ProviderFactoryDeps } from '../factory.js';
import type { RelayRepository } from '../../store/ports.js';

/** What the factory takes from the registry's {@link ProviderFactoryDeps}. */
export type RelayedProviderDeps = Pick<
  ProviderFactoryDeps,
  'provider' | 'relays' | 'bus' | 'seconds' | 'now' | 'relayKeys'
> & {
  config: Pick<Config, 'installationId' | 'leaseSeconds'>;
};

/** The provider's settings, read from its deps once. */
interface RelayedSettings {
  config: ProviderConfig;
  installationId: string;
  relays: RelayRepository;
  bus: Bus;
  /** A relay whose last report is older than this is considered down. */
  heartbeatTimeoutMs: number;
  /** A command not applied after this long is issued again (a create is then observed as NotFound). */
  resendAfterMs?: number;
  /**
   * How long the worker that recorded a command may still be publishing it (its lease): a command
   * recorded and never published counts as lost only after this, so a check cannot take a send in
   * flight for NotFound (a deletion would then finalise the proxy under it).
   */
  sendingMs?: number;
  /**
   * Signs every command (shared/wire/signature.ts) and seals a create's credentials with it
   * (shared/wire/sealed-credentials.ts); the relay refuses unsigned commands and clear credentials when it has keys.
   */
  signingKey?: SigningKey | undefined;
  now?: () => number;
}

class RelayedProvider implements Provider {
  readonly name: string;
  readonly type: string;
  readonly probesRemotely = true;
  private readonly relay: string;
  private readonly now: () => number;
  private readonly resendAfterMs: number;
  private readonly sendingMs: number;

  constructor(private readonly deps: RelayedSettings) {
    this.name = deps.config.name;
    this.type = deps.config.type;
    if (!deps.config.relay) throw new ValidationError('relay', `provider "${this.name}" names no relay`);
    this.relay = deps.config.relay;
    this.now = deps.now ?? Date.now;
    this.resendAfterMs = deps.resendAfterMs ?? 60_000;
    this.sendingMs = deps.sendingMs ?? 60_000;
  }

  /** Placement keys are validated by the relay's backend (it alone knows its hosts and addresses). */
  resolvePlacement(placement: Record<string, unknown>): Record<string, unknown> {
    return placement;
  }

  /** The hosts' country as configured (`providers[].country`: a kvm host's, say). */
  expectedCountry(): string | undefined {
    return this.deps.config.country;
  }

  async create(spec: InstanceSpec): Promise<Instance> {
    const cmd = await this.firestore('get', 'commands', () => this.deps.relays.command(this.relay, spec.name));
    // The same create, recorded but lost (never published, or published and never applied): the
    // same command goes out again, so the relay sees one command however often it is resent.
    const again =
      cmd?.kind === 'create' && !cmd.done && cmd.provider === this.name && cmd.specHash === spec.specHash
        ? cmd
        : undefined;
    const commandId = again?.commandId ?? randomUUID();
    const issuedAt = again?.issuedAt ?? this.now();
    const command: RelayCommand = { kind: 'create', commandId, relay: this.relay, provider: this.name, issuedAt, spec };
    if (again) await this.publish(spec.name, command);
    else await this.send(spec.name, command, spec.proxy, spec.specHash);
    return pending(spec.name, spec.proxy, this.deps.installationId, spec.specHash, issuedAt);
  }

  async get(name: string): Promise<Instance> {
    // One read time for both: a report landing between two reads would make a created instance look gone.
    const { item, command: cmd } = await this.firestore('get', 'instances+commands', () =>
      this.deps.relays.instanceAndCommand(this.relay, name),
    );
    if (item && item.provider === this.name) {
      // A delete not applied yet: the instance is on its way out and must not be seen serving (a
      // proxy re-applied while being deleted, a spec changed back during a replacement).
      if (cmd?.kind === 'delete' && !cmd.done && cmd.provider === this.name) return { ...item, state: 'Terminated' };
      return item;
    }
    if (!cmd || cmd.provider !== this.name)
      throw new NotFoundError(`instance ${name} not found on relay ${this.relay}`);
    if (cmd.kind === 'delete') {
      if (cmd.done) throw new NotFoundError(`instance ${name} was deleted by relay ${this.relay}`);
      // An inventory older than the last command is not proof of NotFound. Once the delete is older
      // than the resend delay and the inventory still does not list the instance, its result was
      // lost (a report that never arrived, a relay that died before reporting): waiting for it
      // would wait forever, and a lost delete would still have the instance listed.
      if (this.now() - (cmd.sentAt ?? cmd.issuedAt) > this.resendAfterMs)
        throw new NotFoundError(`instance ${name} is gone from relay ${this.relay}'s inventory (delete result lost)`);
      throw new RetryableError(`delete of ${name} not yet applied by relay ${this.relay}`, 2000);
    }
    if (!cmd.done) {
      // A create can be lost: never published (its sender died or its publish failed, and its
      // lease is over), or published and never applied (a relay that died holding it). NotFound
      // makes the next check (a sweep at the latest) call `create`, which sends the same command.
      if (cmd.sentAt === undefined) {
        if (this.now() - cmd.issuedAt > this.sendingMs)
          throw new NotFoundError(`create of ${name} was recorded but never published; sending it again`);
      } else if (await this.lost(cmd.sentAt)) {
        throw new NotFoundError(
          `create of ${name} not applied by relay ${this.relay} after ${Math.round((this.now() - cmd.sentAt) / 1000)}s; sending it again`,
        );
      }
      return pending(name, cmd.proxy, this.deps.installationId, cmd.specHash, cmd.issuedAt);
    }
    if (cmd.error)
      return {
        ...pending(name, cmd.proxy, this.deps.installationId, cmd.specHash, cmd.issuedAt),
        state: 'Failed',
        error: cmd.error,
      };
    throw new NotFoundError(`instance ${name} is no longer in relay ${this.relay}'s inventory`);
  }

  /**
   * Whether a command (a create or a delete) sent at `sentAt` and still not applied counts as
   * lost: never within the resend delay; after it, when the relay started again since (the boot
   * that held it may have applied it and died before reporting), or after {@link QUEUED_RESENDS}
   * resend delays in any case (a command dead-lettered). While the boot it
   * was sent to keeps reporting, the command waits in that relay's queue: Pub/Sub delivers it
   * until it is acknowledged, and the relay acknowledges only what it applied. Resending it then
   * only lengthens the queue, by a copy per command per delay once the queue is longer than one
   * delay, and the relay applies (adopts, or deletes again) each copy in turn. The relay's start
   * is on its own clock: a restart it dates before `sentAt` waits the longer delay.
   */
  private async lost(sentAt: number): Promise<boolean> {
    if (this.now() - sentAt <= this.resendAfterMs) return false;
    if (this.now() - sentAt > this.resendAfterMs * QUEUED_RESENDS) return true;
    const relay = await this.firestore('get', '', () => this.deps.relays.relay(this.relay));
    return !relay || relay.startedAt > sentAt;
  }

  async delete(name: string): Promise<void> {
    const cmd = await this.firestore('get', 'commands', () => this.deps.relays.command(this.relay, name));
    if (cmd?.kind === 'delete' && !cmd.done && cmd.provider === this.name) {
      // In flight: sent, and not lost as a create would be (see `lost`: a relay busy with a long
      // queue applies every copy in turn). Lost (never published, or not applied in time): the
      // same command again.
      if (cmd.sentAt !== undefined && !(await this.lost(cmd.sentAt))) return;
      const { commandId, issuedAt } = cmd;
      await this.publish(name, { kind: 'delete', commandId, relay: this.relay, provider: this.name, issuedAt, name });
      return;
    }
    if (
      cmd?.kind === 'delete' &&
      cmd.done &&
      !(await this.firestore('get', 'instances', () => this.deps.relays.instance(this.relay, name)))
    )
      return;
    // An orphan (GC) has no command on record: its inventory entry names the owning proxy.
    const known = cmd ?? (await this.firestore('get', 'instances', () => this.deps.relays.instance(this.relay, name)));
    await this.send(
      name,
      { kind: 'delete', commandId: randomUUID(), relay: this.relay, provider: this.name, issuedAt: this.now(), name },
      known?.proxy ?? '',
      known?.specHash ?? '',
    );
  }

  async list(): Promise<Instance[]> {
    return (await this.listSince(undefined)).instances;
  }

  /**
   * The relay's inventory whole, or what changed since the read that returned `cursor`
   * (`RelayRepository.inventorySince`, rule list-since-vouch); its relay document is also this
   * listing's health check.
   */
  async listSince(cursor: string | undefined): Promise<InstanceDelta> {
    const started = this.now();
    // An unreadable cursor (another version's, say) reads whole.
    const since = parseJsonAs(inventoryMarkSchema, cursor);
    const read = await this.firestore('list', 'instances', () => this.deps.relays.inventorySince(this.relay, since));
    const health = this.health(read?.relay, this.now() - started);
    if (!read || !health.ok)
      throw new RetryableError(`relay ${this.relay} inventory is not current: ${health.message}`);
    const mine = (i: InventoryItem) => i.provider === this.name && i.installationId === this.deps.installationId;
    // An item changed to another provider or installation is no longer in this listing.
    const moved = read.full ? [] : read.items.filter((i) => !mine(i)).map((i) => i.name);
    const instances = read.items.filter(mine);
    return { full: read.full, instances, removed: [...read.removed, ...moved], cursor: JSON.stringify(read.mark) };
  }

  async check(): Promise<ProviderHealth> {
    const started = this.now();
    const doc = await this.firestore('get', '', () => this.deps.relays.relay(this.relay));
    return this.health(doc, this.now() - started);
  }

  /** The health a relay document shows: reported lately, running this provider, which listed ok. */
  private health(doc: RelayDoc | undefined, latencyMs: number): ProviderHealth {
    if (!doc) return { ok: false, message: `relay ${this.relay} has never reported`, latencyMs };
    const age = this.now() - doc.heartbeatAt;
    recordRelayHeartbeatAge(this.relay, age / 1000);
    const mine = doc.providers.find((p) => p.name === this.name);
    if (age > this.deps.heartbeatTimeoutMs) {
      return { ok: false, message: `relay ${this.relay} last reported ${Math.round(age / 1000)}s ago`, latencyMs };
    }
    if (!mine) return { ok: false, message: `relay ${this.relay} does not run provider ${this.name}`, latencyMs };
    return {
      ok: mine.ok,
      message: mine.ok ? `relay ${this.relay} reported ${Math.round(age / 1000)}s ago` : mine.message,
      latencyMs,
      detail: { [this.relay]: { ok: mine.ok, message: mine.message } },
    };
  }

  /** Which inventory items changed recently (from the relay document, one read). */
  async changes(): Promise<(instance: string, sinceMs: number) => boolean> {
    return changedSince(await this.firestore('get', '', () => this.deps.relays.relay(this.relay)));
  }

  /** One Firestore call as a child span of the operation (`firestore.get relays/{relay}/commands`). */
  private firestore<T>(operation: 'get' | 'list' | 'set', collection: string, call: () => Promise<T>): Promise<T> {
    return firestoreCall(operation, collection ? `relays/${this.relay}/${collection}` : 'relays', call);
  }

  /** Records a new command, then publishes it. */
  private async send(name: string, command: RelayCommand, proxy: string, specHash: string): Promise<void> {
    const record: Omit<CommandDoc, 'done' | 'error' | 'sentAt'> = {
      commandId: command.commandId,
      kind: command.kind,
      issuedAt: command.issuedAt,
      provider: this.name,
      proxy,
      specHash,
    };
    await this.firestore('set', 'commands', () => this.deps.relays.recordCommand(this.relay, name, record));
    await this.publish(name, command);
  }

  /** Publishes a recorded command (again) and notes when: until then it counts as never sent. */
  private async publish(name: string, command: RelayCommand): Promise<void> {
    const key = this.deps.signingKey;
    const sign = key && signer(key, 'command');
    const wire = toWire(command, key);
    await this.deps.bus.publish(TOPICS.relayCommands, wire, { relay: this.relay, kind: command.kind }, sign);
    const at = this.now();
    await this.firestore('set', 'commands', () => this.deps.relays.markSent(this.relay, name, command.commandId, at));
  }
}

/** A command sent to a relay that kept running is sent again after this many resend delays (see `lost`). */
export const QUEUED_RESENDS = 10;

function pending(name: string, proxy: string, installationId: string, specHash: string, createdAt: number): Instance {
  return { name, proxy, installationId, specHash, state: 'Pending', ip: '', port: 0, createdAt };
}

/** Relays report every few seconds locally and every 30 s in production; three missed reports is down. */
const HEARTBEAT_TIMEOUT_MS = 120_000;

/**
 * Builds the provider for a relay-backed config entry (types `process` and `kvm`).
 *
 * @throws ValidationError when the entry names no relay, or an option is not a positive number of seconds
 */
export function createRelayedProvider(deps: RelayedProviderDeps): Provider {
  const relay = deps.provider.relay;
  return new RelayedProvider({
    config: deps.provider,
    installationId: deps.config.installationId,
    relays: deps.relays,
    bus: deps.bus,
    heartbeatTimeoutMs: deps.seconds('heartbeatTimeoutSeconds', HEARTBEAT_TIMEOUT_MS / 1000),
    resendAfterMs: deps.seconds('commandResendSeconds', 60),
    sendingMs: deps.config.leaseSeconds * 1000,
    signingKey: relay ? deps.relayKeys?.get(relay)?.[0] : undefined,
    ...(deps.now && { now: deps.now }),
  });
}
