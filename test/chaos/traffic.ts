/** Client traffic through the gateway during the chaos: plain HTTP GETs of the echo endpoint, each timed. */
import { request } from 'node:http';

/** One request that did not get its 200. */
export interface Failure {
  start: number;
  end: number;
  error: string;
}

export interface TrafficResult {
  total: number;
  failures: Failure[];
}

/** One GET of `target` through the proxy at `proxyUrl` (credentials in its userinfo), on a connection of its own. */
function getThrough(proxyUrl: URL, target: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const auth = Buffer.from(`${decodeURIComponent(proxyUrl.username)}:${decodeURIComponent(proxyUrl.password)}`);
    const req = request(
      {
        host: proxyUrl.hostname,
        port: proxyUrl.port,
        path: target,
        headers: { host: new URL(target).host, 'proxy-authorization': `Basic ${auth.toString('base64')}` },
        timeout: 10_000,
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body = (body + chunk).slice(0, 300)));
        res.once('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.once('error', reject);
      },
    );
    req.once('timeout', () => req.destroy(new Error('no answer in 10 s')));
    req.once('error', reject);
    req.end();
  });
}

/** Runs `concurrency` request loops until `stop()`; resolves with every request's outcome. */
export function startTraffic(
  gatewayUrl: string,
  target: string,
  concurrency: number,
): { stop(): Promise<TrafficResult> } {
  const proxy = new URL(gatewayUrl);
  const result: TrafficResult = { total: 0, failures: [] };
  let running = true;
  const loop = async () => {
    while (running) {
      const start = Date.now();
      result.total++;
      try {
        const { status, body } = await getThrough(proxy, target);
        if (status !== 200) result.failures.push({ start, end: Date.now(), error: `HTTP ${status}: ${body.trim()}` });
      } catch (err) {
        result.failures.push({ start, end: Date.now(), error: err instanceof Error ? err.message : String(err) });
      }
    }
  };
  const loops = Array.from({ length: concurrency }, loop);
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return result;
    },
  };
}
