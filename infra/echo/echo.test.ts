/**
 * The deployable echo endpoint as `npm run build` leaves it (dist/echo/): the bundle answers a real
 * request with the caller's address, its unit passes systemd's own checks, and the user-data
 * infra/terraform/echo.tf uploads carries exactly that bundle and unit.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { freePort } from '../local/emulators.js';
import { waitForPort } from '../local/children.js';
import { buildEchoUserData, ECHO_PORT } from './user-data.js';

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bundle = join(root, 'dist', 'echo', 'echo.mjs');
const userData = join(root, 'dist', 'echo', 'user-data.yaml');
const work = mkdtempSync(join(tmpdir(), 'egress-echo-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const cloudConfig = z.object({
  packages: z.array(z.string()),
  write_files: z.array(z.object({ path: z.string(), content: z.string() })),
});

// Spawns node on the bundle and systemd-analyze: seconds while other files load both cores.
describe('echo endpoint (dist/echo)', { timeout: 60_000 }, () => {
  it('is built', () => {
    expect(existsSync(bundle), `${bundle}: run npm run build`).toBe(true);
    expect(existsSync(userData), `${userData}: run npm run build`).toBe(true);
  });

  it('answers a real request with the caller address, on the port the unit names', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [bundle], {
      env: { PATH: process.env['PATH'], ECHO_PORT: String(port), ECHO_HOST: '127.0.0.1' },
      stdio: 'ignore',
    });
    try {
      await waitForPort('127.0.0.1', port, 10_000);
      const answer = await fetch(`http://127.0.0.1:${port}/`);
      expect(await answer.json()).toEqual({ ip: '127.0.0.1' });
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('refuses to start without a valid ECHO_PORT, naming it', async () => {
    const failed = run(process.execPath, [bundle], { env: { PATH: process.env['PATH'], ECHO_PORT: 'http' } });
    const error = await failed.then(
      () => undefined,
      (e: unknown) => z.object({ code: z.number(), stderr: z.string() }).parse(e),
    );
    expect(error?.code).toBe(2);
    expect(error?.stderr).toContain('ECHO_PORT must be a TCP port');
  });

  it("is what infra/echo/user-data.ts makes of the bundle, installing Ubuntu's nodejs", () => {
    const text = readFileSync(userData, 'utf8');
    expect(text).toBe(buildEchoUserData(readFileSync(bundle, 'utf8')));
    const doc = cloudConfig.parse(parse(text));
    expect(doc.packages).toEqual(['nodejs']);
    expect(doc.write_files.find((f) => f.path.endsWith('echo.mjs'))?.content).toBe(readFileSync(bundle, 'utf8'));
  });

  it('has a unit systemd-analyze verify accepts, running the bundle as a dynamic user', async () => {
    const doc = cloudConfig.parse(parse(buildEchoUserData('// echo')));
    const unit = doc.write_files.find((f) => f.path.endsWith('.service'));
    expect(unit?.content).toContain(`Environment=ECHO_PORT=${ECHO_PORT}`);
    expect(unit?.content).toContain('DynamicUser=yes');
    const file = join(work, 'egress-echo.service');
    writeFileSync(file, unit?.content ?? '');
    const { stderr } = await run('systemd-analyze', ['verify', file]).catch((e: { stderr: string }) => ({
      stderr: e.stderr,
    }));
    // verify prints every problem it finds in the unit on stderr (the host's own units are not ours).
    expect(stderr.split('\n').filter((l) => l.includes('egress-echo'))).toEqual([]);
  });
});
