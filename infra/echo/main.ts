/**
 * The deployable echo endpoint (`dist/echo/echo.mjs`): the repository's echo server on every
 * address, for a small VM of its own (infra/echo/user-data.ts, infra/terraform/echo.tf). Probes
 * fetch the config's `echoUrl` through each proxy and compare the answer with the proxy's egress
 * address, so the endpoint must see the TCP peer: a VM with an external address does; a server
 * behind a load balancer or Cloud Run's front end sees the front end instead.
 */
import { startEchoServer } from '../../shared/probe/echo-server.js';

// The unit sets it (infra/echo/user-data.ts); no default, so the VM and a hand run cannot disagree.
const port = Number(process.env['ECHO_PORT']);
if (!Number.isInteger(port) || port < 1 || port > 65_535) {
  console.error(`ECHO_PORT must be a TCP port (1-65535), got "${process.env['ECHO_PORT']}"`);
  process.exit(2);
}
const server = await startEchoServer({ host: process.env['ECHO_HOST'] ?? '0.0.0.0', port });
console.log(`echo listening on port ${server.port}`);
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => void server.close().then(() => process.exit(0)));
}
