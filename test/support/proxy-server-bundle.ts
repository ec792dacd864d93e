/** Builds the real proxy process (`relay/backends/process/proxy-server.ts`) into a runnable bundle for tests. */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';

/** A built proxy-server: run it with `node <path>` and its JSON config on stdin. */
export interface ProxyServerBundle {
  path: string;
  remove(): void;
}

/**
 * Bundles the proxy server with esbuild, outside dist/ (a build wipes it) but under node_modules/,
 * so the bundle's package imports resolve.
 */
export async function buildProxyServer(): Promise<ProxyServerBundle> {
  mkdirSync(join(process.cwd(), 'node_modules', '.cache'), { recursive: true });
  const path = join(
    mkdtempSync(join(process.cwd(), 'node_modules', '.cache', 'egress-proxy-bundle-')),
    'proxy-server.js',
  );
  await build({
    entryPoints: ['relay/backends/process/proxy-server.ts'],
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    outfile: path,
    logLevel: 'warning',
  });
  return { path, remove: () => rmSync(dirname(path), { recursive: true, force: true }) };
}
