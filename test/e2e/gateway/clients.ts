/** The clients users bring, driven against the gateway: curl, Python requests, Scrapy (Debian's), and the gateway CLI itself. */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const PYTHON = '/usr/bin/python3';

/** The environment of a client: no proxy variables of the machine's own (they would bypass or redirect). */
export function clientEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(https?_proxy|no_proxy|all_proxy)$/i.test(k)),
  );
  return { ...env, ...extra };
}

/** `curl -x proxy [-p] url`: the status and body (`-p` tunnels with CONNECT even for http://). */
export async function curl(
  proxy: string,
  url: string,
  extra: string[] = [],
): Promise<{ status: number; body: string }> {
  const { stdout } = await run(
    'curl',
    ['-sS', '--max-time', '20', '-w', '\n%{http_code}', '-x', proxy, ...extra, url],
    {
      env: clientEnv(),
    },
  );
  const at = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(at + 1)), body: stdout.slice(0, at) };
}

/** `curl --socks5-hostname host:port --proxy-user user:pass url`: the status and body (the target's name resolved by the proxy side). */
export async function curlSocks(
  hostPort: string,
  credentials: string,
  url: string,
  extra: string[] = [],
): Promise<{ status: number; body: string }> {
  const args = [
    '-sS',
    '--max-time',
    '20',
    '-w',
    '\n%{http_code}',
    '--socks5-hostname',
    hostPort,
    '--proxy-user',
    credentials,
  ];
  const { stdout } = await run('curl', [...args, ...extra, url], { env: clientEnv() });
  const at = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(at + 1)), body: stdout.slice(0, at) };
}

/**
 * `requests.get` for an http and an https URL through the proxy: `[status, ip, status, ip]`. `ca`
 * verifies the https site; `'false'` turns verification off (an `https://` proxy with a
 * self-signed certificate: requests verifies the proxy with the same setting).
 */
export async function pythonRequests(proxy: string, http: string, https: string, ca: string): Promise<unknown> {
  const script = [
    'import json, sys, requests',
    'proxy, plain, secure, ca = sys.argv[1:5]',
    "verify = False if ca == 'false' else ca",
    "p = {'http': proxy, 'https': proxy}",
    'a = requests.get(plain, proxies=p, verify=verify, timeout=20)',
    'b = requests.get(secure, proxies=p, verify=verify, timeout=20)',
    "print(json.dumps([a.status_code, a.json()['ip'], b.status_code, b.json()['ip']]))",
  ].join('\n');
  const { stdout } = await run(PYTHON, ['-c', script, proxy, http, https, ca], { env: clientEnv() });
  return JSON.parse(stdout);
}

/** A Scrapy crawl of `start` through the proxy (`http_proxy`): every page's URL, status and reported ip. */
export async function scrapyCrawl(
  dir: string,
  proxy: string,
  start: string,
): Promise<{ url: string; status: number; ip: string }[]> {
  const spider = join(dir, 'spider.py');
  const out = join(dir, 'pages.jsonl');
  writeFileSync(
    spider,
    [
      'import json, scrapy',
      'class Pages(scrapy.Spider):',
      "    name = 'pages'",
      '    def __init__(self, start=None, **kw):',
      '        super().__init__(**kw)',
      '        self.start_urls = [start]',
      '    def parse(self, response):',
      "        for href in response.css('a::attr(href)').getall():",
      '            yield response.follow(href, self.page)',
      '    def page(self, response):',
      "        yield {'url': response.url, 'status': response.status, 'ip': json.loads(response.text)['ip']}",
      '',
    ].join('\n'),
  );
  const settings = [
    'LOG_LEVEL=WARNING',
    'ROBOTSTXT_OBEY=False',
    'TELNETCONSOLE_ENABLED=False',
    'RETRY_ENABLED=False',
    'CONCURRENT_REQUESTS=8',
    'DOWNLOAD_TIMEOUT=20',
  ];
  await run(
    PYTHON,
    ['-m', 'scrapy', 'runspider', spider, '-a', `start=${start}`, '-O', out, ...settings.flatMap((s) => ['-s', s])],
    {
      env: clientEnv({ http_proxy: proxy }),
      cwd: dir,
      timeout: 120_000,
    },
  );
  const { readFileSync } = await import('node:fs');
  return readFileSync(out, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { url: string; status: number; ip: string });
}

/** `egress gateway …` as a user runs it: its URL (stdout), its metrics URL (stderr), stopped by PID with SIGINT. */
export interface CliGateway {
  url: string;
  metricsUrl: string;
  output(): string;
  /** SIGINT, resolves with the exit code. */
  stop(): Promise<number | null>;
}

export async function startCliGateway(home: string, args: string[]): Promise<CliGateway> {
  const child: ChildProcess = spawn(process.execPath, ['dist/cli/main.js', 'gateway', ...args], {
    env: { ...clientEnv(), EGRESS_HOME: home, EGRESS_API_URL: '', EGRESS_TOKEN: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 30_000;
  while (!/metrics at \S+/.test(stderr) || !stdout.includes('\n')) {
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`egress gateway did not start:\n${stdout}${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: stdout.split('\n')[0] ?? '',
    metricsUrl: /metrics at (\S+)/.exec(stderr)?.[1] ?? '',
    output: () => stdout + stderr,
    async stop() {
      if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, 'SIGINT');
      return exited;
    },
  };
}

/** Answered attempts per fleet proxy from the gateway's Prometheus endpoint. */
export async function requestsPerProxy(metricsUrl: string): Promise<Map<string, number>> {
  const text = await (await fetch(metricsUrl)).text();
  const counts = new Map<string, number>();
  for (const m of text.matchAll(/^egress_gateway_proxy_attempts_total\{([^}]*)\} (\d+)$/gm)) {
    const proxy = /proxy_name="([^"]+)"/.exec(m[1] ?? '')?.[1];
    if (proxy && (m[1] ?? '').includes('gateway_outcome="ok"'))
      counts.set(proxy, (counts.get(proxy) ?? 0) + Number(m[2]));
  }
  return counts;
}
