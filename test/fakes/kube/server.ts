/**
 * The fake's HTTP surface: the core/v1 Pod and Secret endpoints and SelfSubjectAccessReview, with
 * bearer-token authentication, RBAC, quota, graceful deletion, and injected faults.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { IncomingMessage } from 'node:http';
import { admitLimits, admitNamespace, admitPodSecurity, type NamespaceRules } from './admission.js';
import type { Kubelet } from './kubelet.js';
import { withDefaultTolerations } from './node-lifecycle.js';
import { accessReviewSchema, decode, podBodySchema, secretBodySchema, validatePod, validateSecret } from './schemas.js';
import { rbacAllows, type NamespaceRbac } from './rbac.js';
import { parseSelector } from './selector.js';
import * as status from './status.js';
import { stamp, type ObjectStore, type StoredPod } from './store.js';

export type Verb = 'get' | 'list' | 'create' | 'update' | 'delete';
export type Resource = 'pods' | 'secrets' | 'selfsubjectaccessreviews';

/** A fault answered instead of (or, for `slow`, before) the real handling. */
export interface Fault {
  kind: 'quota' | 'invalid' | 'serverError' | 'unavailable' | 'slow';
  verb?: Verb;
  resource?: Resource;
  /** How many matching requests it applies to (default: until removed). */
  times?: number;
  /** For `invalid`: the field the 422 names (default `spec.containers[0].image`). */
  field?: string;
  /** For `slow`: how long to stall. */
  delayMs?: number;
}

/** One request as the fake saw it. */
export interface RequestRecord {
  method: string;
  path: string;
  verb?: Verb;
  resource?: Resource;
  namespace?: string;
  user?: string;
  code: number;
}

export interface ServerState {
  store: ObjectStore;
  kubelet: Kubelet;
  /** Bearer token → user name. */
  tokens: Map<string, string>;
  /** Denied `user|verb|resource|namespace` (namespace `*` for all). */
  denied: Set<string>;
  /** Users authorised by the Roles and RoleBindings in `rbac` (rbac.ts); the others by `denied` alone. */
  rbacUsers: Set<string>;
  rbac: Map<string, NamespaceRbac>;
  /** Most Pods a namespace may hold (a ResourceQuota on `count/pods`). */
  podQuota: Map<string, number>;
  /** Pod Security level, LimitRange and lifecycle per namespace (admission.ts). */
  namespaceRules: Map<string, NamespaceRules>;
  faults: Fault[];
  log: RequestRecord[];
}

interface Answer {
  code: number;
  body: unknown;
}

const ROUTE = /^\/api\/v1\/namespaces\/([a-z0-9-]+)\/(pods|secrets)(?:\/([^/]+))?$/;
const REVIEWS = '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews';

/** Is `user` allowed to `verb` `resource` in `namespace`? (What RBAC and the access review both answer.) */
export function allowed(state: ServerState, user: string, verb: string, resource: string, namespace: string): boolean {
  if (state.denied.has(`${user}|${verb}|${resource}|${namespace}`) || state.denied.has(`${user}|${verb}|${resource}|*`))
    return false;
  return !state.rbacUsers.has(user) || rbacAllows(state.rbac, user, verb, resource, namespace);
}

/** Graceful deletion as the API server does it for Pods: unscheduled or terminal Pods go at once. */
export function deletePod(state: ServerState, pod: StoredPod, graceSeconds?: number): StoredPod {
  // A delete with gracePeriodSeconds=0 of a Pod already terminating is the forced delete: the
  // object goes at once, whatever its node says (https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination-forced).
  if (pod.metadata.deletionTimestamp && graceSeconds === 0) {
    state.kubelet.kill(pod);
    return pod;
  }
  if (pod.metadata.deletionTimestamp) return pod;
  const grace = graceSeconds ?? pod.spec.terminationGracePeriodSeconds ?? 30;
  const terminal = pod.status.phase === 'Failed' || pod.status.phase === 'Succeeded';
  if (!pod.spec.nodeName || terminal || grace === 0) {
    state.kubelet.kill(pod);
    return pod;
  }
  pod.metadata.deletionTimestamp = stamp(Date.now() + grace * 1000);
  pod.metadata.deletionGracePeriodSeconds = grace;
  state.store.touch(pod);
  state.kubelet.terminate(pod, grace);
  return pod;
}

/** Handles one request; the caller writes the answer as JSON. */
export async function handle(state: ServerState, req: IncomingMessage, raw: string): Promise<Answer> {
  const url = new URL(req.url ?? '/', 'http://fake');
  const record: RequestRecord = { method: req.method ?? 'GET', path: url.pathname, code: 0 };
  state.log.push(record);
  const answer = await route(state, req, url, raw, record).catch((err: unknown) => {
    if (err instanceof status.StatusError) return { code: err.failure.code, body: err.failure.body };
    return { code: 500, body: status.internalError(String(err)).failure.body };
  });
  record.code = answer.code;
  return answer;
}

async function route(
  state: ServerState,
  req: IncomingMessage,
  url: URL,
  raw: string,
  record: RequestRecord,
): Promise<Answer> {
  const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  const user = token ? state.tokens.get(token) : undefined;
  if (!user) throw status.unauthorized();
  record.user = user;
  if (url.pathname === '/version' && req.method === 'GET')
    return { code: 200, body: { major: '1', minor: '30', gitVersion: 'v1.30.0-fake' } };
  const body = () => {
    try {
      return raw ? (JSON.parse(raw) as unknown) : undefined;
    } catch {
      throw status.badRequest('the body is not valid JSON');
    }
  };
  if (url.pathname === REVIEWS && req.method === 'POST') {
    Object.assign(record, { verb: 'create', resource: 'selfsubjectaccessreviews' });
    await applyFaults(state, 'create', 'selfsubjectaccessreviews', '');
    const review = decode(accessReviewSchema, body(), 'SelfSubjectAccessReview');
    const a = review.spec.resourceAttributes;
    const ok = allowed(state, user, a.verb, a.resource, a.namespace ?? '*');
    const result = ok ? { allowed: true, reason: 'RBAC: allowed by RoleBinding' } : { allowed: false };
    return {
      code: 201,
      body: { ...review, apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', status: result },
    };
  }
  const m = ROUTE.exec(url.pathname);
  if (!m) throw status.noRoute();
  const [, namespace = '', resource = 'pods', name] = m;
  const res = resource === 'secrets' ? 'secrets' : 'pods';
  const verbs: Record<string, Verb | undefined> = name
    ? { GET: 'get', PUT: 'update', DELETE: 'delete' }
    : { GET: 'list', POST: 'create' };
  const verb = verbs[req.method ?? ''];
  if (!verb) throw status.failureMethod(req.method ?? '');
  Object.assign(record, { verb, resource: res, namespace });
  if (!allowed(state, user, verb, res, namespace)) throw status.forbidden(user, verb, res, namespace, name);
  const target = name ?? nameOf(body());
  await applyFaults(state, verb, res, target ?? '', namespace);
  return res === 'pods'
    ? pods(state, verb, namespace, name, url, body)
    : secrets(state, verb, namespace, name, url, body);
}

function nameOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const meta: unknown = Reflect.get(body, 'metadata');
  const name: unknown = typeof meta === 'object' && meta !== null ? Reflect.get(meta, 'name') : undefined;
  return typeof name === 'string' ? name : undefined;
}

async function applyFaults(
  state: ServerState,
  verb: Verb,
  resource: Resource,
  name: string,
  namespace = '',
): Promise<void> {
  const fault = state.faults.find((f) => (!f.verb || f.verb === verb) && (!f.resource || f.resource === resource));
  if (!fault) return;
  if (fault.times !== undefined && --fault.times <= 0) state.faults.splice(state.faults.indexOf(fault), 1);
  switch (fault.kind) {
    case 'slow':
      await sleep(fault.delayMs ?? 5000);
      return;
    case 'quota':
      throw status.quotaExceeded(
        resource,
        name,
        state.store.listPods(namespace).length,
        state.store.listPods(namespace).length,
      );
    case 'invalid':
      throw status.invalid(resource === 'pods' ? 'Pod' : 'Secret', name, [
        { field: fault.field ?? 'spec.containers[0].image', message: 'Invalid value: injected fault' },
      ]);
    case 'serverError':
      throw status.internalError('etcdserver: request timed out (injected)');
    case 'unavailable':
      throw status.unavailable();
  }
}

/** A list answer: the items whose labels match the request's `labelSelector`. */
function list<T extends { metadata: { labels?: Record<string, string> | undefined } }>(
  kind: string,
  version: string,
  items: T[],
  url: URL,
): Answer {
  const match = parseSelector(url.searchParams.get('labelSelector'));
  const selected = items.filter((i) => match(i.metadata.labels));
  return { code: 200, body: { kind, apiVersion: 'v1', metadata: { resourceVersion: version }, items: selected } };
}

function pods(
  state: ServerState,
  verb: Verb,
  namespace: string,
  name: string | undefined,
  url: URL,
  body: () => unknown,
): Answer {
  const { store } = state;
  switch (verb) {
    case 'list':
      return list('PodList', store.listVersion, store.listPods(namespace), url);
    case 'create': {
      if (!store.namespaces.has(namespace)) throw status.notFound('namespaces', namespace);
      const pod = decode(podBodySchema, body(), 'Pod');
      if (pod.metadata.namespace && pod.metadata.namespace !== namespace)
        throw status.badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      validatePod(pod);
      const rules = state.namespaceRules.get(namespace);
      admitNamespace(rules, 'pods', pod.metadata.name, namespace);
      admitLimits(rules, pod);
      admitPodSecurity(rules, pod);
      const hard = state.podQuota.get(namespace);
      const used = store
        .listPods(namespace)
        .filter((p) => p.status.phase !== 'Failed' && p.status.phase !== 'Succeeded').length;
      // ResourceQuota is admission, which runs before storage: a create of a name that exists in
      // a full namespace is refused 403 before it could be 409 AlreadyExists
      // (https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/#resourcequota).
      if (hard !== undefined && used >= hard) throw status.quotaExceeded('pods', pod.metadata.name, used, hard);
      pod.spec.tolerations = withDefaultTolerations(pod.spec.tolerations);
      const created = store.createPod(namespace, pod);
      state.kubelet.admit(created);
      return { code: 201, body: created };
    }
    case 'get':
      return { code: 200, body: store.pod(namespace, name ?? '') };
    case 'delete': {
      const grace = url.searchParams.get('gracePeriodSeconds');
      return {
        code: 200,
        body: deletePod(state, store.pod(namespace, name ?? ''), grace === null ? undefined : Number(grace)),
      };
    }
    case 'update':
      throw status.failureMethod('PUT');
  }
}

function secrets(
  state: ServerState,
  verb: Verb,
  namespace: string,
  name: string | undefined,
  url: URL,
  body: () => unknown,
): Answer {
  const { store } = state;
  switch (verb) {
    case 'list':
      return list('SecretList', store.listVersion, store.listSecrets(namespace), url);
    case 'create': {
      if (!store.namespaces.has(namespace)) throw status.notFound('namespaces', namespace);
      const secret = decode(secretBodySchema, body(), 'Secret');
      validateSecret(secret);
      admitNamespace(state.namespaceRules.get(namespace), 'secrets', secret.metadata.name, namespace);
      return { code: 201, body: store.createSecret(namespace, secret) };
    }
    case 'update': {
      const secret = decode(secretBodySchema, body(), 'Secret');
      if (secret.metadata.name !== name)
        throw status.badRequest(
          `the name of the object (${secret.metadata.name}) does not match the name on the URL (${name})`,
        );
      validateSecret(secret);
      const current = store.secret(namespace, name);
      const expected: unknown = Reflect.get(secret.metadata, 'resourceVersion');
      if (typeof expected === 'string' && expected !== current.metadata.resourceVersion)
        throw status.conflict('secrets', name);
      return { code: 200, body: store.replaceSecret(namespace, name, secret) };
    }
    case 'get':
      return { code: 200, body: store.secret(namespace, name ?? '') };
    case 'delete':
      return { code: 200, body: store.removeSecret(namespace, name ?? '') };
  }
}
