/** Renders the API's answers into the page: phase counts, the proxies table, providers, relays. */
import type { Proxy, ProviderHealth, ProviderList, Relay } from './api-client.js';
import { latencyChart } from './chart.js';
import { byId, emptyRow, h, setText, syncRows } from './dom.js';
import { age, countByPhase, duration, latency } from './format.js';

export interface ProxyActions {
  select: (name: string) => void;
  copy: (name: string) => void;
  remove: (name: string) => void;
}

/** A coloured badge for a phase or a provider status. */
export function badge(text: string, testId?: string): HTMLSpanElement {
  return h('span', { class: `badge state-${text.toLowerCase()}`, 'data-testid': testId }, text);
}

function setBadge(el: Element, text: string): void {
  setText(el, text);
  el.className = `badge state-${text.toLowerCase()}`;
}

export function renderCounts(proxies: readonly Proxy[]): void {
  const list = byId<HTMLUListElement>('phase-counts');
  const counts = countByPhase(proxies.map((p) => p.status.phase));
  list.replaceChildren(
    h(
      'li',
      { class: 'phase-total', 'data-testid': 'phase-count-total' },
      h('span', { class: 'count' }, proxies.length),
      ' proxies',
    ),
    ...[...counts].map(([phase, n]) =>
      h(
        'li',
        { class: `phase state-${phase.toLowerCase()}${n ? '' : ' zero'}`, 'data-testid': `phase-count-${phase}` },
        h('span', { class: 'count' }, n),
        ` ${phase}`,
      ),
    ),
  );
  byId('latency-chart').replaceChildren(
    latencyChart(
      proxies.map((p) => ({ name: p.metadata.name, phase: p.status.phase, latencyMs: p.status.health?.latencyMs })),
    ),
  );
}

const PROXY_COLUMNS = 9;

function proxyRow(proxy: Proxy, actions: ProxyActions): HTMLTableRowElement {
  const name = proxy.metadata.name;
  return h(
    'tr',
    { 'data-testid': `proxy-row-${name}` },
    h(
      'th',
      { scope: 'row' },
      h(
        'button',
        {
          type: 'button',
          class: 'link',
          'data-testid': 'select-proxy',
          'aria-controls': 'proxy-detail',
          title: `Show conditions and events of ${name}`,
          onclick: () => actions.select(name),
        },
        name,
      ),
    ),
    h('td', { 'data-col': 'provider' }),
    h('td', { 'data-col': 'phase' }, badge('', 'phase')),
    h('td', { 'data-col': 'address', class: 'mono' }),
    h('td', { 'data-col': 'egress', class: 'mono' }),
    h('td', { 'data-col': 'country' }),
    h('td', { 'data-col': 'age', class: 'num' }),
    h('td', { 'data-col': 'latency', class: 'num' }),
    h(
      'td',
      { class: 'actions' },
      h(
        'button',
        {
          type: 'button',
          'data-testid': 'copy-url',
          'aria-label': `Copy the URL of ${name}`,
          onclick: () => actions.copy(name),
        },
        'Copy URL',
      ),
      h(
        'button',
        {
          type: 'button',
          class: 'danger',
          'data-testid': 'delete-proxy',
          'aria-label': `Delete ${name}`,
          onclick: () => actions.remove(name),
        },
        'Delete',
      ),
    ),
  );
}

function fillProxyRow(row: HTMLTableRowElement, proxy: Proxy, now: number, selected: string | undefined): void {
  const cell = (col: string) => row.querySelector(`[data-col="${col}"]`) as HTMLElement;
  const { phase, address, health, egress } = proxy.status;
  row.dataset['phase'] = phase;
  row.classList.toggle('selected', proxy.metadata.name === selected);
  setText(cell('provider'), proxy.spec.provider);
  setBadge(cell('phase').firstElementChild as Element, phase);
  setText(cell('address'), address ?? '—');
  const ip = health?.egressIp ?? egress?.ip ?? '—';
  const sharedWith = egress?.sharedWith ?? [];
  const egressCell = cell('egress');
  const egressKey = `${ip} ${sharedWith.join(',')}`;
  if (egressCell.dataset['value'] !== egressKey) {
    egressCell.dataset['value'] = egressKey;
    const flag = h(
      'span',
      { class: 'badge state-shared', title: `shared with ${sharedWith.join(', ')}` },
      'shared',
      h('span', { class: 'sr-only' }, ` with ${sharedWith.join(', ')}`),
    );
    egressCell.replaceChildren(ip, ...(sharedWith.length ? [' ', flag] : []));
  }
  // The egress's country (from the location database), `!` where the provider expected another; its
  // AS and organisation in the title, so the table still fits 1280 px without scrolling.
  const verified = proxy.status.conditions.find((c) => c.type === 'EgressVerified');
  const mismatch = verified?.status === 'False';
  setText(cell('country'), health?.country ? `${health.country}${mismatch ? ' !' : ''}` : '—');
  const as = health?.asn == null ? '' : `AS${health.asn} ${health.asnOrg ?? ''}`.trim();
  cell('country').title = mismatch ? `${verified?.message ?? ''} ${as}`.trim() : as;
  cell('country').classList.toggle('warn', mismatch);
  setText(cell('age'), age(proxy.metadata.createdAt, now));
  setText(
    cell('latency'),
    health && !health.ok ? `failing (${health.consecutiveFailures})` : latency(health?.latencyMs),
  );
  cell('latency').classList.toggle('warn', Boolean(health && !health.ok));
  const [copy, remove] = Array.from(row.querySelectorAll<HTMLButtonElement>('td.actions button'));
  if (copy) copy.disabled = phase !== 'Ready';
  if (remove) remove.disabled = Boolean(proxy.metadata.deletionRequestedAt);
}

export function renderProxies(
  proxies: readonly Proxy[],
  now: number,
  selected: string | undefined,
  actions: ProxyActions,
): void {
  const body = byId<HTMLTableSectionElement>('proxies-body');
  if (!proxies.length) {
    emptyRow(body, PROXY_COLUMNS, 'No proxies yet: apply one below.');
    return;
  }
  syncRows(
    body,
    proxies,
    (p) => p.metadata.name,
    (p) => proxyRow(p, actions),
    (row, p) => fillProxyRow(row, p, now, selected),
  );
}

/** The releases of the egress-location database under the providers table. */
export function renderEgressDatabase(db: ProviderList['egressDatabase']): void {
  const release = (r: { package: string; publishedAt: string | null }) =>
    `${r.package} (published ${r.publishedAt?.slice(0, 10) ?? 'at an unknown date'})`;
  setText(byId('egress-database'), db ? `Egress location: ${release(db.country)}, ${release(db.asn)}` : '');
}

export function renderProviders(providers: readonly ProviderHealth[], now: number): void {
  const body = byId<HTMLTableSectionElement>('providers-body');
  if (!providers.length) {
    emptyRow(body, 5, 'No providers configured.');
    return;
  }
  syncRows(
    body,
    providers,
    (p) => p.name,
    (p) =>
      h(
        'tr',
        { 'data-testid': `provider-row-${p.name}` },
        h('th', { scope: 'row' }, p.name),
        h('td', { 'data-col': 'status' }, badge('')),
        h('td', { 'data-col': 'latency', class: 'num' }),
        h('td', { 'data-col': 'checked', class: 'num' }),
        h('td', { 'data-col': 'message', class: 'message' }),
      ),
    (row, p) => {
      const cell = (col: string) => row.querySelector(`[data-col="${col}"]`) as HTMLElement;
      row.title = `type ${p.type}`;
      setBadge(cell('status').firstElementChild as Element, p.status);
      setText(cell('latency'), p.lastCheckAt ? latency(p.latencyMs) : '—');
      setText(cell('checked'), p.lastCheckAt ? `${age(p.lastCheckAt, now)} ago` : 'never');
      const hosts = Object.entries(p.detail ?? {}).map(([host, d]) => `${d.ok ? '✓' : '✗'} ${host}: ${d.message}`);
      setText(cell('message'), [p.message, ...hosts].filter(Boolean).join(' · '));
    },
  );
}

export function renderRelays(relays: readonly Relay[]): void {
  const body = byId<HTMLTableSectionElement>('relays-body');
  if (!relays.length) {
    emptyRow(body, 4, 'No relay-backed providers configured.');
    return;
  }
  syncRows(
    body,
    relays,
    (r) => r.id,
    (r) =>
      h(
        'tr',
        { 'data-testid': `relay-row-${r.id}` },
        h('th', { scope: 'row' }, r.id),
        h('td', { 'data-col': 'heartbeat', class: 'num' }),
        h('td', { 'data-col': 'instances', class: 'num' }),
        h('td', { 'data-col': 'providers', class: 'message' }),
      ),
    (row, r) => {
      const cell = (col: string) => row.querySelector(`[data-col="${col}"]`) as HTMLElement;
      const seconds = r.heartbeatAgeSeconds;
      setText(cell('heartbeat'), seconds === null ? 'never' : `${duration(Math.max(0, seconds))} ago`);
      cell('heartbeat').classList.toggle('warn', seconds === null || seconds > 60);
      setText(cell('instances'), String(r.instances));
      setText(
        cell('providers'),
        r.providers.map((p) => `${p.ok ? '✓' : '✗'} ${p.name}${p.ok ? '' : `: ${p.message}`}`).join(' · ') || '—',
      );
    },
  );
}
