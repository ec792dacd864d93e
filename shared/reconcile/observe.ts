/**
 * The observe step: what the provider says about the proxy's instance now — or, in a sweep, the
 * observation stored in a settled proxy's status (`storedObservation`) — probed through the proxy
 * when the provider does not probe remotely.
 */
import { asEgressError } from '../errors.js';
import type { Instance, Provider, ProviderHealth } from '../providers/contract.js';
import { nextHealth, probeThroughProxy, type ProbeResult } from '../probe/probe.js';
import { providerHealth, type CheckBatch } from './batch.js';
import type { ReconcileDeps, Subject } from './context.js';
import type { Observation } from './decision.js';
import { storedObservation } from './stored-observation.js';
import { judgeAgainstPin, pinnedFingerprint } from './tls-pin.js';

/** An observation, and whether it is the stored one (good only to confirm that nothing is to be done). */
export interface Observed {
  observation: Observation;
  reused: boolean;
  /** The stored one was refused because the instance changed since its probe (`storedObservation`). */
  changedSinceProbe?: boolean;
}

/**
 * Observes the subject's instance.
 *
 * @param reuse - a sweep: take the stored observation when `storedObservation` allows it
 */
export async function observe(
  deps: ReconcileDeps,
  subject: Subject,
  batch: CheckBatch,
  reuse: boolean,
): Promise<Observed> {
  const { doc, provider } = subject;
  if (!provider) {
    const missing = { provider: doc.spec.provider, message: deps.registry.missing(doc.spec.provider) };
    return { observation: { kind: 'providerMissing', ...missing }, reused: false };
  }
  const health = await providerHealth(batch, deps, provider);
  if (reuse) {
    const now = subject.now();
    const { installationId } = deps.config;
    const stored = await storedObservation(doc, provider, installationId, health, now, subject.refreshMs, batch);
    if (stored === 'changed')
      return { ...(await observeNow(deps, subject, provider, health)), changedSinceProbe: true };
    if (stored) return { observation: stored, reused: true };
  }
  return observeNow(deps, subject, provider, health);
}

async function observeNow(
  deps: ReconcileDeps,
  subject: Subject,
  provider: Provider,
  health: ProviderHealth | undefined,
): Promise<Observed> {
  const observation = await withOwnProbe(
    deps,
    subject,
    provider,
    await getInstance(provider, subject.instanceName, health),
  );
  if (observation.kind !== 'found') return { observation, reused: false };
  const { status } = subject.doc;
  const pinned = pinnedFingerprint(status.instance, observation.instance);
  const instance = judgeAgainstPin(observation.instance, pinned, status.health?.consecutiveFailures ?? 0);
  return { observation: { kind: 'found', instance }, reused: false };
}

async function getInstance(provider: Provider, name: string, health: ProviderHealth | undefined): Promise<Observation> {
  if (health && !health.ok) return { kind: 'providerDown', message: health.message };
  try {
    return { kind: 'found', instance: await provider.get(name) };
  } catch (err) {
    const e = asEgressError(err);
    return e.code === 'NotFound' ? { kind: 'notFound', why: e.message } : { kind: 'error', error: e.toInfo() };
  }
}

/** A Running instance of a provider that does not probe remotely: its health from a probe through it. */
async function withOwnProbe(
  deps: ReconcileDeps,
  subject: Subject,
  provider: Provider,
  observation: Observation,
): Promise<Observation> {
  if (provider.probesRemotely || observation.kind !== 'found' || observation.instance.state !== 'Running')
    return observation;
  const { instance } = observation;
  // The prober's own path to the instance (rule reachable-with-credentials): a VM's internal address.
  const result = await probeOwn(deps, subject, instance);
  const health = nextHealth(subject.doc.status.health, result, new Date(subject.now()));
  return { kind: 'found', instance: { ...instance, health } };
}

/**
 * Probes through the proxy with its credentials: remembered per instance (told apart by `createdAt`,
 * each created with its own credentials), forgotten when a probe fails. Through its TLS listener,
 * pinned (`pinnedFingerprint`), when the instance has one.
 */
async function probeOwn(deps: ReconcileDeps, subject: Subject, instance: Instance): Promise<ProbeResult> {
  const { name } = subject;
  const { port, tlsPort } = instance;
  const host = instance.probeIp || instance.ip;
  const tls =
    tlsPort === undefined
      ? undefined
      : { port: tlsPort, fingerprint: pinnedFingerprint(subject.doc.status.instance, instance) };
  const credentials = await deps.proxies.credentials(name, { incarnation: String(instance.createdAt) });
  if (!credentials) return { ok: false, latencyMs: 0, error: 'no credentials stored for this proxy' };
  const probe = deps.probe ?? probeThroughProxy;
  const result = await probe({
    host,
    port,
    ...credentials,
    echoUrl: deps.config.echoUrl,
    timeoutMs: deps.config.probeTimeoutSeconds * 1000,
    tls,
  });
  if (!result.ok) deps.proxies.forgetCredentials(name);
  return result;
}
