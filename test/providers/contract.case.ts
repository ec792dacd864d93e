/**
 * The shared provider conformance suite: every provider runs it from its own test file with
 * `runProviderContract({...})`; a skipped test must say why. It checks the MUST rules of
 * `shared/providers/contract.ts`.
 */
import { request } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Instance, InstanceSpec, Provider } from '../../shared/providers/contract.js';
import { EgressError, NotFoundError } from '../../shared/errors.js';
import { startEchoServer, type EchoServer } from '../../shared/probe/echo-server.js';
import { probeThroughProxy } from '../../shared/probe/probe.js';
import { eventually } from '../support/eventually.js';

export const CONTRACT_TESTS = [
  'create reaches Running with a non-zero createdAt',
  'a duplicate create adopts the instance',
  'the instance is reachable through the proxy with its credentials, and refuses without',
  'get of an unknown instance throws NotFound',
  'delete is idempotent and get then throws NotFound',
  'list returns only this installation’s instances',
  'concurrent creates of different names all run',
  'an invalid placement is refused naming the field',
  'an instance that dies is reported Stopped or Terminated',
] as const;
export type ContractTest = (typeof CONTRACT_TESTS)[number];

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
  cleanup(): Promise<void>;
}

export interface ContractCase {
  type: string;
  setup(): Promise<ContractHarness>;
  /** How long an asynchronous backend may take to converge. */
  timeoutMs?: number;
  skip?: { reason: string; tests: ContractTest[] }[];
  /** How many instances the concurrency test creates at once (default 5; emulated guests are heavy). */
  concurrentCreates?: number;
}

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

/** Registers the conformance suite as `provider contract: <type>`. */
export function runProviderContract(c: ContractCase): void {
  const timeout = c.timeoutMs ?? 30_000;
  const skipped = new Map<string, string>();
  for (const s of c.skip ?? []) {
    if (!s.reason) throw new Error('every skip must say why');
    for (const t of s.tests) skipped.set(t, s.reason);
  }
  const test = (name: ContractTest, fn: () => Promise<void>) => {
    const reason = skipped.get(name);
    if (reason) it.skip(`${name} (skipped: ${reason})`, fn);
    else it(name, fn, timeout * 2);
  };

  describe(`provider contract: ${c.type}`, () => {
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

    // The concurrent creates' instances, kept running for the two tests after it that each need a
    // running instance of their own and end it (delete, kill): two guest boots fewer under TCG.
    // Run alone (-t), each of those tests creates its own. afterAll deletes the ones left unclaimed.
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

    test('create reaches Running with a non-zero createdAt', async () => {
      const { spec: s, instance: i } = await sharedInstance();
      expect(i.createdAt).toBeGreaterThan(0);
      expect(i).toMatchObject({ name: s.name, proxy: s.proxy, installationId: h.installationId, specHash: s.specHash });
      expect(i.ip).not.toBe('');
      expect(i.port).toBeGreaterThan(0);
    });

    test('a duplicate create adopts the instance', async () => {
      const { spec: s, instance: first } = await sharedInstance();
      await h.provider.create(s);
      const again = await running(s.name);
      expect(again.port).toBe(first.port);
      expect(again.createdAt).toBe(first.createdAt);
      expect((await h.provider.list()).filter((i) => i.name === s.name)).toHaveLength(1);
    });

    test('the instance is reachable through the proxy with its credentials, and refuses without', async () => {
      const { spec: s, instance: i } = await sharedInstance();
      // The prober's address (probeIp, else ip); clients use ip (fetchThrough).
      const ok = await probeThroughProxy({
        host: i.probeIp || i.ip,
        port: i.port,
        ...s.credentials,
        echoUrl: echo.url,
        timeoutMs: 5000,
      });
      expect(ok.ok, ok.error).toBe(true);
      expect(await fetchThrough(i, `${s.credentials.username}:${s.credentials.password}`, echo.url)).toBe(200);
      expect(await fetchThrough(i, undefined, echo.url)).toBe(407);
      // Real tinyproxy (the gcp, kubernetes and kvm guests) answers wrong credentials with 401
      // where RFC 9110 §15.5.8 wants 407; either way the request is refused.
      expect([401, 407]).toContain(await fetchThrough(i, 'u:wrong', echo.url));
    });

    test('get of an unknown instance throws NotFound', async () => {
      await expect(h.provider.get(`ep-${uniq('none')}`)).rejects.toBeInstanceOf(NotFoundError);
    });

    test('list returns only this installation’s instances', async () => {
      const { spec: mine } = await sharedInstance();
      const theirs = spec({ installationId: `${h.installationId}-other` });
      await h.provider.create(theirs);
      // The backend has acted on the other installation's create before the list is judged: it
      // runs, or (a relay serves one installation) it was refused. Pending is only the command
      // record of a relay-backed provider.
      await eventually(async () => expect((await h.provider.get(theirs.name)).state).not.toBe('Pending'), timeout);
      await eventually(async () => {
        const names = (await h.provider.list()).map((i) => i.name);
        expect(names).toContain(mine.name);
        expect(names).not.toContain(theirs.name);
      }, timeout);
    });

    test('an invalid placement is refused naming the field', async () => {
      const { placement, field } = h.invalidPlacement;
      const s = spec({ placement });
      let refused: { field?: string | undefined; message: string } | undefined;
      try {
        await h.provider.create({ ...s, placement: h.provider.resolvePlacement(placement) });
        // Asynchronous backends report the refusal as a Failed instance.
        const failed = await eventually(async () => {
          const i = await h.provider.get(s.name);
          expect(i.state).toBe('Failed');
          return i;
        }, timeout);
        refused = failed.error;
      } catch (err) {
        if (!(err instanceof EgressError)) throw err;
        refused = err.toInfo();
      }
      expect(refused?.field).toBe(field);
      expect(refused?.message).toContain(field);
    });

    test('concurrent creates of different names all run', async () => {
      const specs = Array.from({ length: c.concurrentCreates ?? 5 }, () => make());
      for (const s of specs) unclaimed.add(s.name);
      await Promise.all(specs.map((s) => h.provider.create(s)));
      const instances = await Promise.all(specs.map((s) => running(s.name)));
      expect(new Set(instances.map((i) => `${i.ip}:${i.port}`)).size).toBe(specs.length);
      spares.push(...specs);
    });

    test('delete is idempotent and get then throws NotFound', async () => {
      const s = await runningSpec();
      await running(s.name);
      await h.provider.delete(s.name);
      await gone(s.name);
      await h.provider.delete(s.name);
      await h.provider.delete(`ep-${uniq('never')}`);
      await gone(s.name);
    });

    test('an instance that dies is reported Stopped or Terminated', async () => {
      if (!h.kill) throw new Error('this provider needs a kill hook, or a skip with a reason');
      const s = await runningSpec();
      const i = await running(s.name);
      await h.kill(i);
      await eventually(
        async () => expect(['Stopped', 'Terminated']).toContain((await h.provider.get(s.name)).state),
        timeout,
      );
    });
  });
}
