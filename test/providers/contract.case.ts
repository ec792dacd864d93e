/**
 * The shared provider conformance suite: `test/providers/contract.test.ts` runs it for every kit
 * (`test/kits/registry.ts#KITS`; those whose instances are real guests in
 * `contract-guests.test.ts`); a skipped test must say why. It runs one case per rule
 * (`./contract-cases.ts#CONTRACT_CASES`), named `<rule id>: <description>`.
 */
import { request } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Instance, InstanceSpec } from '../../shared/providers/contract.js';
import { EgressError, NotFoundError } from '../../shared/errors.js';
import { startEchoServer, type EchoServer } from '../../shared/probe/echo-server.js';
import { probeThroughProxy } from '../../shared/probe/probe.js';
import { eventually } from '../support/eventually.js';
import type { ContractHarness, ProviderKit } from '../kits/kit.js';
import { caseName, CONTRACT_CASES, type ContractTest } from './contract-cases.js';

let counter = 0;
const uniq = (prefix: string) => `${prefix}-${Date.now().toString(36).slice(-4)}${(counter++).toString(36)}`;

/**
 * Fetches the echo endpoint through the proxy as a plain HTTP client would (absolute-URI form), on
 * a connection of its own: tinyproxy (the gcp, kubernetes and kvm guests) relays the target's
 * `HTTP/1.1` status line without `Connection: close` and then closes the connection, so a
 * keep-alive agent's next request on that socket ends in "socket hang up" before tinyproxy sees it.
 */
function fetchThrough(instance: Instance, auth: string | undefined, target: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host: new URL(target).host };
    if (auth) headers['proxy-authorization'] = `Basic ${Buffer.from(auth).toString('base64')}`;
    const options = { host: instance.ip, port: instance.port, path: target, headers, timeout: 5000, agent: false };
    const req = request(options, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** Registers the conformance suite of `kit`'s provider as `provider contract: <type>`. */
export function runProviderContract(kit: ProviderKit): void {
  const c = kit.contract;
  const timeout = c.timeoutMs ?? 30_000;
  const skipped = new Map<string, string>();
  for (const s of c.skip ?? []) {
    if (!s.reason) throw new Error('every skip must say why');
    for (const t of s.tests) skipped.set(t, s.reason);
  }
  describe(`provider contract: ${kit.type}`, () => {
    let h: ContractHarness;
    let echo: EchoServer;
    const created = new Set<string>();
    const make = (over: Partial<InstanceSpec> = {}): InstanceSpec => {
      const proxy = uniq('ct');
      const s = {
        name: `ep-${proxy}`,
        proxy,
        installationId: h.installationId,
        specHash: 'contract0',
        port: 0,
        placement: h.placement,
        credentials: { username: 'u', password: `p-${proxy}` },
        ...over,
      };
      return s;
    };
    /** A spec whose instance afterEach deletes. */
    const spec = (over: Partial<InstanceSpec> = {}): InstanceSpec => {
      const s = make(over);
      created.add(s.name);
      return s;
    };
    const running = (name: string) =>
      eventually(async () => {
        const i = await h.provider.get(name);
        expect(i.state).toBe('Running');
        return i;
      }, timeout);
    const gone = (name: string) =>
      eventually(async () => {
        await expect(h.provider.get(name)).rejects.toBeInstanceOf(NotFoundError);
      }, timeout);

    // One running instance for the tests that only read it or create it again: a guest boots in
    // about a minute under TCG. Whichever of them runs first creates it (each still runs alone with
    // -t); afterAll deletes it.
    let shared: Promise<{ spec: InstanceSpec; instance: Instance }> | undefined;
    let sharedName: string | undefined;
    const sharedInstance = () => {
      shared ??= (async () => {
        const s = make();
        sharedName = s.name;
        await h.provider.create(s);
        return { spec: s, instance: await running(s.name) };
      })();
      return shared;
    };

    // The concurrent creates' instances, kept running for the tests after it that each need a running
    // instance of their own and end it (delete-idempotent, report-until-gone): one guest boot fewer
    // each under TCG. Run alone (-t), or once they are used up, each of those tests
    // creates its own. afterAll deletes the ones left unclaimed.
    const spares: InstanceSpec[] = [];
    const unclaimed = new Set<string>();
    const runningSpec = async (): Promise<InstanceSpec> => {
      const spare = spares.shift();
      if (spare) {
        unclaimed.delete(spare.name);
        created.add(spare.name);
        return spare;
      }
      const s = spec();
      await h.provider.create(s);
      return s;
    };

    beforeAll(async () => {
      h = await c.setup();
      echo = await startEchoServer(h.echoHost ? { host: h.echoHost } : {});
    }, 120_000);
    // Each test's instances go when it ends: emulated guests left running would slow every later test.
    afterEach(async () => {
      await Promise.all([...created].map((name) => h?.provider.delete(name).catch(() => undefined)));
      created.clear();
    }, 120_000);
    afterAll(async () => {
      if (sharedName) created.add(sharedName);
      for (const name of unclaimed) created.add(name);
      for (const name of created) await h?.provider.delete(name).catch(() => undefined);
      await echo?.close();
      await h?.cleanup();
    }, 120_000);

    /** How `create` refuses `placement` (resolved first, as the reconciler does): thrown, or a Failed instance. */
    const refusal = async (placement: Record<string, unknown>) => {
      const s = spec({ placement });
      try {
        await h.provider.create({ ...s, placement: h.provider.resolvePlacement(placement) });
        // Asynchronous backends report the refusal as a Failed instance.
        const failed = await eventually(async () => {
          const i = await h.provider.get(s.name);
          expect(i.state).toBe('Failed');
          return i;
        }, timeout);
        return failed.error;
      } catch (err) {
        if (!(err instanceof EgressError)) throw err;
        return err.toInfo();
      }
    };
    const names = (instances: Instance[]) => instances.map((i) => i.name).sort();

    const cases: Record<ContractTest, () => Promise<void>> = {
      async 'created-at-nonzero'() {
        const { instance: i } = await sharedInstance();
        expect(i.createdAt).toBeGreaterThan(0);
        expect(i.ip).not.toBe('');
        expect(i.port).toBeGreaterThan(0);
      },

      async 'carries-identity'() {
        const { spec: s, instance: i } = await sharedInstance();
        expect(i).toMatchObject({
          name: s.name,
          proxy: s.proxy,
          installationId: h.installationId,
          specHash: s.specHash,
        });
        const listed = (await h.provider.list()).find((l) => l.name === s.name);
        expect(listed).toMatchObject({ proxy: s.proxy, installationId: h.installationId, specHash: s.specHash });
      },

      async 'create-adopts'() {
        const { spec: s, instance: first } = await sharedInstance();
        await h.provider.create(s);
        const again = await running(s.name);
        expect(again.port).toBe(first.port);
        expect(again.createdAt).toBe(first.createdAt);
        expect((await h.provider.list()).filter((i) => i.name === s.name)).toHaveLength(1);
      },

      async 'reachable-with-credentials'() {
        const { spec: s, instance: i } = await sharedInstance();
        const credentials = h.credentials ? await h.credentials(s, i) : s.credentials;
        // The prober's address (probeIp, else ip); clients use ip (fetchThrough).
        const ok = await probeThroughProxy({
          host: i.probeIp || i.ip,
          port: i.port,
          ...credentials,
          echoUrl: echo.url,
          timeoutMs: 5000,
        });
        expect(ok.ok, ok.error).toBe(true);
        expect(await fetchThrough(i, `${credentials.username}:${credentials.password}`, echo.url)).toBe(200);
        expect(await fetchThrough(i, undefined, echo.url)).toBe(407);
        // Real tinyproxy (the gcp, kubernetes and kvm guests) answers wrong credentials with 401
        // where RFC 9110 §15.5.8 wants 407; either way the request is refused.
        expect([401, 407]).toContain(await fetchThrough(i, 'u:wrong', echo.url));
      },

      async 'remote-health'() {
        // A provider whose probes run in the check function skips this case, saying so.
        expect(h.provider.probesRemotely, 'only a provider that probes remotely runs this case').toBe(true);
        const { spec: s } = await sharedInstance();
        const health = await eventually(async () => {
          const i = await h.provider.get(s.name);
          expect(i.state).toBe('Running');
          expect(i.health).toBeDefined();
          return i.health;
        }, timeout);
        expect(Number.isNaN(Date.parse(health?.lastProbeAt ?? ''))).toBe(false);
        expect(health?.ok, health?.error).toBe(true);
      },

      async 'not-found-certain'() {
        await expect(h.provider.get(`ep-${uniq('none')}`)).rejects.toBeInstanceOf(NotFoundError);
      },

      async 'list-own-complete'() {
        const { spec: mine } = await sharedInstance();
        const theirs = spec({ installationId: `${h.installationId}-other` });
        await h.provider.create(theirs);
        // The backend has acted on the other installation's create before the list is judged: it
        // runs, or (a relay serves one installation) it was refused. Pending is only the command
        // record of a relay-backed provider.
        await eventually(async () => expect((await h.provider.get(theirs.name)).state).not.toBe('Pending'), timeout);
        await eventually(async () => {
          const listed = names(await h.provider.list());
          expect(listed).toContain(mine.name);
          expect(listed).not.toContain(theirs.name);
        }, timeout);
      },

      async 'list-since-vouch'() {
        const listSince = h.provider.listSince?.bind(h.provider);
        // A provider without listSince is listed whole by GC and skips this case, saying so.
        if (!listSince) throw new Error('this provider has no listSince: skip this case with a reason');
        const whole = await listSince(undefined);
        expect(whole.full).toBe(true);
        expect(names(whole.instances)).toEqual(names(await h.provider.list()));
        const s = spec();
        await h.provider.create(s);
        // The new instance is in the delta (or a whole listing, when the provider cannot vouch) in
        // whatever state it is: a listing vouches for every instance the provider holds, booted or
        // not (a kvm guest takes ~90 s to boot under TCG; waiting for it adds nothing here).
        const added = await eventually(async () => {
          const d = await listSince(whole.cursor);
          expect(names(d.instances)).toContain(s.name);
          return d;
        }, timeout);
        await h.provider.delete(s.name);
        await gone(s.name);
        await eventually(async () => {
          const d = await listSince(added.cursor);
          expect(names(d.instances)).not.toContain(s.name);
          if (!d.full) expect(d.removed).toContain(s.name);
        }, timeout);
      },

      async 'placement-deterministic'() {
        const before = await h.provider.list();
        const input = structuredClone(h.placement);
        const first = h.provider.resolvePlacement(input);
        expect(h.provider.resolvePlacement(input)).toEqual(first);
        expect(h.provider.resolvePlacement(structuredClone(h.placement))).toEqual(first);
        // No side effect: the input is as it was, and the backend holds no more instances than before.
        expect(input).toEqual(h.placement);
        expect(names(await h.provider.list())).toEqual(names(before));
        const invalid = () => h.provider.resolvePlacement(structuredClone(h.invalidPlacement.placement));
        let firstRefusal: unknown;
        let secondRefusal: unknown;
        try {
          invalid();
        } catch (err) {
          firstRefusal = err instanceof EgressError ? err.toInfo() : err;
        }
        try {
          invalid();
        } catch (err) {
          secondRefusal = err instanceof EgressError ? err.toInfo() : err;
        }
        expect(secondRefusal).toEqual(firstRefusal);
      },

      async 'placement-field'() {
        const { placement, field } = h.invalidPlacement;
        const refused = await refusal(placement);
        expect(refused?.field).toBe(field);
        expect(refused?.message).toContain(field);
      },

      async 'typed-errors'() {
        const refused = await refusal(h.invalidPlacement.placement);
        expect(['Permanent', 'Validation']).toContain(refused?.code);
      },

      async 'async-failure-failed'() {
        const s = await h.failLater(spec());
        // The failure comes after create returned: create itself succeeds.
        await h.provider.create(s);
        const failed = await eventually(async () => {
          const i = await h.provider.get(s.name);
          expect(i.state).toBe('Failed');
          return i;
        }, timeout);
        expect(failed.error?.code).toMatch(/^(Permanent|QuotaExceeded|Retryable|Validation)$/);
        expect(failed.error?.message).not.toBe('');
        expect(failed).toMatchObject({ name: s.name, proxy: s.proxy, specHash: s.specHash });
      },

      async 'concurrent-safe'() {
        const specs = Array.from({ length: c.concurrentCreates ?? 5 }, () => make());
        for (const s of specs) unclaimed.add(s.name);
        await Promise.all(specs.map((s) => h.provider.create(s)));
        const instances = await Promise.all(specs.map((s) => running(s.name)));
        expect(new Set(instances.map((i) => `${i.ip}:${i.port}`)).size).toBe(specs.length);
        spares.push(...specs);
      },

      async 'delete-idempotent'() {
        const s = await runningSpec();
        await running(s.name);
        await h.provider.delete(s.name);
        await gone(s.name);
        await h.provider.delete(s.name);
        await h.provider.delete(`ep-${uniq('never')}`);
        await gone(s.name);
      },

      async 'report-until-gone'() {
        const s = await runningSpec();
        const i = await running(s.name);
        const auth = `${s.credentials.username}:${s.credentials.password}`;
        expect(await fetchThrough(i, auth, echo.url)).toBe(200);
        await h.provider.delete(s.name);
        // Until get says NotFound it reports the instance (any state); once it does, the proxy is
        // really gone: a replacement created now could not meet the old one still serving.
        await eventually(async () => {
          const seen = await h.provider.get(s.name).catch((err: unknown) => {
            if (err instanceof NotFoundError) return undefined;
            throw err;
          });
          expect(seen, 'get still reports the instance').toBeUndefined();
        }, timeout);
        const served = await fetchThrough(i, auth, echo.url).catch(() => 0);
        expect(served, 'the proxy still serves after get said NotFound').not.toBe(200);
      },

      async 'dead-is-stopped'() {
        if (!h.kill) throw new Error('this provider needs a kill hook, or a skip with a reason');
        // The last case (checked below) ends the shared instance: no case after it reads it, and a
        // kvm guest boot fewer is a minute less under TCG.
        const { spec: s } = await sharedInstance();
        const i = await running(s.name);
        await h.kill(i);
        await eventually(
          async () => expect(['Stopped', 'Terminated']).toContain((await h.provider.get(s.name)).state),
          timeout,
        );
      },
    };

    const order = Object.keys(CONTRACT_CASES) as ContractTest[];
    if (order.at(-1) !== 'dead-is-stopped')
      throw new Error('dead-is-stopped kills the shared instance: it must be the last case of CONTRACT_CASES');
    for (const id of order) {
      const reason = skipped.get(id);
      if (reason) it.skip(`${caseName(id)} (skipped: ${reason})`, cases[id]);
      else it(caseName(id), cases[id], timeout * 2);
    }
  });
}
