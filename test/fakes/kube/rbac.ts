/**
 * The RBAC authorizer for users the fake evaluates by their Roles and RoleBindings: a request is
 * allowed when a RoleBinding in its namespace names the user (a subject of kind `User`, matched by
 * name) and the Role it refers to has a rule whose apiGroups, resources and verbs all match (`*`
 * matching any). Rules only add: there are no deny rules, and a namespaced Role never answers for
 * a cluster-wide request (https://kubernetes.io/docs/reference/access-authn-authz/rbac/).
 * ClusterRoles, groups and aggregation are not modelled.
 */
import { z } from 'zod';

const ruleSchema = z.object({
  apiGroups: z.array(z.string()),
  resources: z.array(z.string()),
  verbs: z.array(z.string()).min(1),
});
const roleSchema = z.object({
  apiVersion: z.literal('rbac.authorization.k8s.io/v1'),
  kind: z.literal('Role'),
  metadata: z.object({ name: z.string().min(1) }),
  rules: z.array(ruleSchema),
});
const bindingSchema = z.object({
  apiVersion: z.literal('rbac.authorization.k8s.io/v1'),
  kind: z.literal('RoleBinding'),
  metadata: z.object({ name: z.string().min(1) }),
  roleRef: z.object({ apiGroup: z.literal('rbac.authorization.k8s.io'), kind: z.literal('Role'), name: z.string() }),
  subjects: z.array(z.object({ kind: z.enum(['User', 'Group', 'ServiceAccount']), name: z.string() })).default([]),
});

type Rule = z.infer<typeof ruleSchema>;
type Binding = z.infer<typeof bindingSchema>;

/** What one namespace holds. */
export interface NamespaceRbac {
  roles: Map<string, Rule[]>;
  bindings: Binding[];
}

/**
 * Adds Role and RoleBinding objects (as `kubectl apply -n namespace -f` would) to `rbac`.
 * @throws Error naming the object that is neither
 */
export function applyRbacObjects(rbac: Map<string, NamespaceRbac>, namespace: string, objects: unknown[]): void {
  const ns = rbac.get(namespace) ?? { roles: new Map<string, Rule[]>(), bindings: [] };
  rbac.set(namespace, ns);
  objects.forEach((o, i) => {
    const role = roleSchema.safeParse(o);
    if (role.success) return void ns.roles.set(role.data.metadata.name, role.data.rules);
    const binding = bindingSchema.safeParse(o);
    if (binding.success) return void ns.bindings.push(binding.data);
    throw new Error(`object ${i} is neither a Role nor a RoleBinding: ${role.error.issues[0]?.message}`);
  });
}

const matches = (granted: string[], wanted: string) => granted.includes('*') || granted.includes(wanted);

/** May `user` `verb` `resource` (core group) in `namespace` (`*`: cluster-wide)? */
export function rbacAllows(
  rbac: Map<string, NamespaceRbac>,
  user: string,
  verb: string,
  resource: string,
  namespace: string,
): boolean {
  const ns = rbac.get(namespace);
  if (!ns) return false;
  return ns.bindings.some(
    (b) =>
      b.subjects.some((s) => s.kind === 'User' && s.name === user) &&
      (ns.roles.get(b.roleRef.name) ?? []).some(
        (r) => matches(r.apiGroups, '') && matches(r.resources, resource) && matches(r.verbs, verb),
      ),
  );
}
