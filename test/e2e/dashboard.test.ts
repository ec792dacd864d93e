/** The dashboard in Debian's headless Chromium against the real local stack: sign in, the sample fleet, actions. */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, CHROMIUM_ARGS } from './chromium.js';
import { startLocalStack, type RunningStack } from './stack.js';

const SCREENSHOT = join('test-results', 'dashboard.png');
const USAGE_SCREENSHOT = join('test-results', 'dashboard-usage.png');
const HOUR = 3_600_000;
const FLEET = ['local-1', 'local-2', 'local-rotating'];

let stack: RunningStack | undefined;
let context: BrowserContext | undefined;
let profile: string | undefined;
let page: Page;
let apiUrl = '';
let token = '';
/** What the page logged that names its Content-Security-Policy: a blocked script or style. */
const policyViolations: string[] = [];

const row = (name: string) => page.getByTestId(`proxy-row-${name}`);
const readyRow = (name: string) => page.locator(`[data-testid="proxy-row-${name}"][data-phase="Ready"]`);
const text = async (selector: string) => (await page.locator(selector).textContent()) ?? '';

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is missing at ${CHROMIUM}: the dashboard's browser test needs Debian's chromium ` +
        '(`apt-get install -y chromium`, as .ci/run does) or CHROMIUM_PATH naming another build',
    );
  }
  stack = await startLocalStack({ EGRESS_PORT_OFFSET: '700' });
  apiUrl = stack.localEnv()['EGRESS_API_URL'] ?? '';
  token = stack.localEnv()['EGRESS_TOKEN'] ?? '';
  profile = mkdtempSync(join(tmpdir(), 'egress-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 800 },
  });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: apiUrl });
  page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) policyViolations.push(m.text());
  });
});

afterAll(async () => {
  await context?.close();
  if (stack && stack.process.exitCode === null) await stack.interrupt();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

describe('e2e: dashboard in a browser', () => {
  it('asks for the token and brings the form back when the API refuses it', async () => {
    expect(apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const answer = await page.goto(`${apiUrl}/`);
    // Its own inline script and styles run under a policy that lets no other site frame it.
    expect(answer?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
    await page.getByLabel('API token').fill('not-the-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#login-error:not([hidden])').waitFor();
    expect(await text('#login-error')).toMatch(/refused the token.*invalid bearer token/);
    expect(await page.locator('#dashboard').isHidden()).toBe(true);
  });

  it('shows the sample fleet Ready with providers, relays and the latency chart', async () => {
    await page.getByLabel('API token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    for (const name of FLEET) await readyRow(name).waitFor({ timeout: 30_000 });
    await expect.poll(() => text('[data-testid="phase-count-Ready"]')).toBe('3 Ready');
    expect(await row('local-1').locator('[data-col="address"]').textContent()).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(await page.getByTestId('provider-row-local').textContent()).toContain('local');
    expect(await page.getByTestId('relay-row-local').textContent()).toMatch(/\d+s ago/);
    expect(await page.locator('[data-testid="latency-chart"] g.bar').count()).toBe(3);
    // Readable at 1280×800: the proxies table needs no horizontal scrolling.
    const fits =
      "(() => { const s = document.querySelector('#proxies .scroll'); return s.scrollWidth <= s.clientWidth; })()";
    expect(await page.evaluate<boolean>(fits)).toBe(true);
    // The token survives a reload of the tab (sessionStorage), and the page asks for nothing again.
    await page.reload();
    await readyRow('local-1').waitFor();
  });

  it("shows a proxy's conditions and events, and copies its URL", async () => {
    await row('local-1').getByTestId('select-proxy').click();
    await page.getByTestId('condition-Ready').waitFor();
    expect(await page.getByTestId('condition-Ready').textContent()).toContain('True');
    await expect.poll(() => page.locator('[data-testid="events"] tbody tr').count()).toBeGreaterThan(0);
    await row('local-1').getByTestId('copy-url').click();
    await expect.poll(() => text('#action-status')).toMatch(/Copied the URL of local-1/);
    const copied = await page.evaluate<string>('navigator.clipboard.readText()');
    expect(copied).toMatch(/^http:\/\/[^:]+:[^@]+@127\.0\.0\.1:\d+$/);
  });

  it('applies documents from the form and shows the API error with its field', async () => {
    const area = page.getByLabel(/Proxy documents/);
    await area.fill('apiVersion: egress.dev/v1\nkind: Proxy\nmetadata: { name: bad-1 }\nspec: { port: 0 }\n');
    await page.getByRole('button', { name: 'Apply', exact: true }).click();
    await expect.poll(() => text('#apply-results')).toMatch(/bad-1: Validation: .*\(field spec\.provider\)/);
    await page.getByRole('button', { name: 'Reset to the sample' }).click();
    expect(await area.inputValue()).toContain('name: sample-1');
    await page.getByRole('button', { name: 'Apply', exact: true }).click();
    await expect.poll(() => text('#apply-results')).toMatch(/sample-1: accepted/);
    await readyRow('sample-1').waitFor({ timeout: 60_000 });
  });

  it('deletes a proxy after a confirm step and sees it go', async () => {
    await row('local-2').getByTestId('delete-proxy').click();
    const dialog = page.locator('#delete-dialog');
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('Delete proxy local-2?');
    await page.getByRole('button', { name: 'Cancel' }).click();
    expect(await dialog.isVisible()).toBe(false);
    expect(await row('local-2').count()).toBe(1);
    await row('local-2').getByTestId('delete-proxy').click();
    await page.locator('#confirm-delete').click();
    await expect.poll(() => text('#action-status')).toMatch(/Deletion of local-2 accepted/);
    await row('local-2').waitFor({ state: 'detached', timeout: 60_000 });
    const gone = await fetch(`${apiUrl}/v1/proxies/local-2`, { headers: { authorization: `Bearer ${token}` } });
    expect(gone.status).toBe(404);
    await expect.poll(() => text('[data-testid="phase-count-total"]')).toBe('3 proxies');
    for (const name of ['local-1', 'local-rotating', 'sample-1']) expect(await row(name).count()).toBe(1);
    mkdirSync('test-results', { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(existsSync(SCREENSHOT)).toBe(true);
  });

  it('applies a pool from the form, shows its members spread over local and local-b, and scales it', async () => {
    const pool = [
      'apiVersion: egress.dev/v1',
      'kind: ProxyPool',
      'metadata: { name: dash }',
      'spec:',
      '  replicas: 2',
      '  minAvailable: 1',
      '  template: { spec: { provider: local } }',
      '  spread: [{ provider: local }, { provider: local-b }]',
      '',
    ].join('\n');
    await page.getByLabel(/Proxy documents/).fill(pool);
    await page.getByRole('button', { name: 'Apply', exact: true }).click();
    await expect.poll(() => text('#apply-results')).toMatch(/dash: accepted/);
    const poolRow = page.getByTestId('pool-row-dash');
    await expect.poll(() => poolRow.locator('[data-col="ready"]').textContent(), { timeout: 90_000 }).toBe('2/2');
    expect(await poolRow.locator('[data-col="spread"]').textContent()).toBe('local 1/1 · local-b 1/1');
    expect(await poolRow.locator('li').count()).toBe(2);
    await page.getByTestId('pool-replicas-dash').fill('1');
    await page.getByTestId('pool-scale-dash').click();
    await expect.poll(() => text('#pools-status')).toMatch(/scaling to 1 accepted/);
    await expect.poll(() => poolRow.locator('li').count(), { timeout: 60_000 }).toBe(1);
    await expect.poll(() => poolRow.locator('[data-col="ready"]').textContent(), { timeout: 30_000 }).toBe('1/1');
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });

  it("charts a pool's last 24 h (members, demand, success rate, cost) and says so when a pool has none", async () => {
    const pool = ['apiVersion: egress.dev/v1', 'kind: ProxyPool', 'metadata: { name: charted }', 'spec:'];
    pool.push('  replicas: 0', '  template: { spec: { provider: local } }', '');
    await page.getByLabel(/Proxy documents/).fill(pool.join('\n'));
    await page.getByRole('button', { name: 'Apply', exact: true }).click();
    await expect.poll(() => text('#apply-results')).toMatch(/charted: accepted/);
    const doc = stack?.db.collection('pools').doc('charted');
    await expect
      .poll(async () => Number((await doc?.get())?.get('status.revision') ?? 0), { timeout: 30_000 })
      .toBeGreaterThan(0);
    // 24 h of usage as the pool controller keeps it (its levels held at 0 members and no demand now,
    // as this pool has: its reconciles leave the hours as they are).
    // Not across an hour's end: the charts' window would move by an hour under the assertions.
    const toNextHour = HOUR - (Date.now() % HOUR);
    if (toNextHour < 30_000) await new Promise((r) => setTimeout(r, toNextHour + 1000));
    await doc?.update({ 'status.usage': dayOfUsage(Date.now()) });

    const usageCard = page.locator('#pool-usage');
    await page.getByTestId('usage-pool').selectOption('charted');
    await page.locator('[data-testid="usage-chart-cost"] canvas').waitFor();
    const charts = ['members', 'demand', 'success', 'cost'];
    expect(await usageCard.locator('figure.usage-chart').count()).toBe(4);
    // Series per chart, the time axis not counted (uPlot's legend has a row for each).
    const series = await Promise.all(
      charts.map((c) => page.locator(`[data-testid="usage-chart-${c}"] .u-legend .u-series`).count()),
    );
    expect(series.map((n) => n - 1)).toEqual([2, 2, 1, 2]);
    const label = (c: string) =>
      page.locator(`[data-testid="usage-chart-${c}"] [role="img"]`).getAttribute('aria-label');
    expect(await label('members')).toBe('Ready members, last 24 h: peak 4, mean 2');
    expect(await label('demand')).toBe('Demand (in flight or waiting), last 24 h: peak 10, mean 2.5');
    expect(await label('success')).toBe('Success rate, last 24 h: 95.0 % (22,800 of 24,000 requests answered)');
    expect(await label('cost')).toBe('Cost, last 24 h: $1.44 (instances $1.20, egress $0.24)');
    expect(await page.getByTestId('usage-summary-cost').textContent()).toBe(await label('cost'));
    // Drawn: each canvas has its size and far more than a blank canvas's painted pixels (robust to
    // fonts and anti-aliasing, unlike a pixel-exact golden image).
    for (const c of charts) {
      const drawn = await page.evaluate<{ width: number; height: number; painted: number }, string>((id) => {
        const canvas = document.querySelector<HTMLCanvasElement>(`[data-testid="usage-chart-${id}"] canvas`);
        const ctx = canvas?.getContext('2d');
        if (!canvas || !ctx) return { width: 0, height: 0, painted: 0 };
        const pixels = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
        let painted = 0;
        for (let i = 3; i < pixels.length; i += 4) if ((pixels[i] ?? 0) > 0) painted += 1;
        return { width: canvas.clientWidth, height: canvas.clientHeight, painted };
      }, c);
      expect(drawn.width, c).toBeGreaterThanOrEqual(260);
      expect(drawn.height, c).toBeGreaterThan(60);
      expect(drawn.painted, c).toBeGreaterThan(1000);
    }
    mkdirSync('test-results', { recursive: true });
    const png = await usageCard.screenshot({ path: USAGE_SCREENSHOT });
    expect(png.length).toBeGreaterThan(10_000);

    // A pool no gateway has used: a sentence, no chart.
    await page.getByTestId('usage-pool').selectOption('dash');
    await expect.poll(() => text('[data-testid="usage-empty"]')).toMatch(/^No usage of pool dash in the last 24 hours/);
    expect(await usageCard.locator('canvas').count()).toBe(0);
  });

  it('ran under its Content-Security-Policy: nothing it needs was blocked', () => {
    expect(policyViolations).toEqual([]);
  });
});

/**
 * A day of a pool's usage as shared/pools/usage.ts keeps it: each hour 1,000 requests, 950 answered,
 * $0.05 of instances and $0.01 of egress; Ready members held at 0.5–3.5 (peaks 1–4), demand 0–5 (peaks 0–10).
 */
function dayOfUsage(now: number) {
  const current = Math.floor(now / HOUR) * HOUR;
  const counts = { requests: 1000, succeeded: 950, bytesIn: 2 ** 20, bytesOut: 0, instanceUsd: 0.05, egressUsd: 0.01 };
  const hours = Array.from({ length: 24 }, (_, i) => ({
    hour: current - (23 - i) * HOUR,
    ...counts,
    members: { peak: 1 + (i % 4), mean: 0.5 + (i % 4), seconds: 3600 },
    demand: { peak: 2 * (i % 6), mean: i % 6, seconds: 3600 },
  }));
  const day = {
    requests: 24_000,
    succeeded: 22_800,
    bytesIn: 24 * 2 ** 20,
    bytesOut: 0,
    instanceUsd: 1.2,
    egressUsd: 0.24,
  };
  return {
    total: { ...day, since: current - 23 * HOUR },
    hours,
    last24h: day,
    folded: {},
    foldedAt: now,
    levels: { members: 0, demand: 0, at: now },
  };
}
