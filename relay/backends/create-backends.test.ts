/** createBackends: every option of a backend's entry in the relay configuration reaches the backend it builds. */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logger.js';
import { LOCAL_RELAY_CONFIG, parseRelayConfig } from '../config.js';
import { createBackends } from './create-backends.js';

const logger = createLogger({ level: 'ERROR', write: () => undefined });

describe('createBackends: process options from the relay config', () => {
  let stateDir: string;
  beforeAll(async () => {
    stateDir = await mkdtemp(path.join(os.tmpdir(), 'egress-create-backends-'));
  });
  afterAll(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  const relay = (options: Record<string, unknown>) =>
    parseRelayConfig({
      ...LOCAL_RELAY_CONFIG,
      echoUrl: 'http://echo.example.com/',
      backends: [
        { provider: 'p', type: 'process', stateDir, bindAddresses: ['127.0.0.1'], portRange: [1, 2], ...options },
      ],
    });

  /** The health check of the one backend the config builds: it names the executables it found. */
  async function checked(options: Record<string, unknown>): Promise<{ ok: boolean; message: string }> {
    const backend = createBackends(relay(options), { logger }).get('p');
    if (!backend) throw new Error('no backend p');
    try {
      return await backend.check();
    } finally {
      await backend.close();
    }
  }

  it('runs the tinyproxy and stunnel the config names', async () => {
    // Any executable stands in for both: the check only asks that they be executable.
    const found = await checked({ tinyproxyPath: process.execPath, stunnelPath: process.execPath });
    expect(found.ok).toBe(true);
    expect(found.message).toContain(`${process.execPath}, ${process.execPath}`);
    const noTinyproxy = await checked({ tinyproxyPath: '/nonexistent/tinyproxy' });
    expect(noTinyproxy.ok).toBe(false);
    expect(noTinyproxy.message).toMatch(/\/nonexistent\/tinyproxy.*tinyproxy-bin/);
    const noStunnel = await checked({ tinyproxyPath: process.execPath, stunnelPath: '/nonexistent/stunnel4' });
    expect(noStunnel.ok).toBe(false);
    expect(noStunnel.message).toMatch(/\/nonexistent\/stunnel4.*Debian package stunnel4/);
  });
});
