/** The selected proxy's panel: its spec and health, its conditions and its recent events (newest first). */
import type { ProxyDetail } from './api-client.js';
import { byId, h } from './dom.js';
import { age, latency } from './format.js';
import { badge } from './render.js';

function facts(rows: [string, string | Node][]): HTMLDListElement {
  return h('dl', { class: 'facts' }, ...rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

function table(caption: string, testId: string, headers: string[], rows: HTMLTableRowElement[], empty: string) {
  return h(
    'table',
    { 'data-testid': testId, class: 'compact' },
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, ...headers.map((x) => h('th', { scope: 'col' }, x)))),
    h(
      'tbody',
      {},
      ...(rows.length ? rows : [h('tr', {}, h('td', { colspan: headers.length, class: 'muted empty' }, empty))]),
    ),
  );
}

export function renderDetail(proxy: ProxyDetail, now: number): void {
  const { metadata, spec, status } = proxy;
  const health = status.health;
  const labels = Object.entries(metadata.labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  // Each condition takes two rows: its type, status, reason and age; then its message across the table.
  const conditions = status.conditions.flatMap((c) => [
    h(
      'tr',
      { 'data-testid': `condition-${c.type}`, class: 'has-sub' },
      h('th', { scope: 'row' }, c.type),
      h('td', {}, h('span', { class: `badge cond-${c.status.toLowerCase()}` }, c.status)),
      h('td', {}, c.reason),
      h('td', { class: 'num', title: c.lastTransitionTime }, age(c.lastTransitionTime, now)),
    ),
    h('tr', { class: 'sub' }, h('td', { colspan: 4, class: 'message' }, c.message)),
  ]);
  const events = proxy.events.map((e) =>
    h(
      'tr',
      { class: e.type === 'Warning' ? 'warning' : '', title: `${e.type} event at ${e.at}` },
      h('td', { class: 'num' }, age(e.at, now)),
      h('td', {}, e.type === 'Warning' ? `⚠ ${e.reason}` : e.reason),
      h('td', { class: 'message' }, e.message),
    ),
  );
  byId('detail-title').textContent = `Proxy ${metadata.name}`;
  byId('detail-body').replaceChildren(
    facts([
      ['Phase', badge(status.phase)],
      ['Provider', spec.provider],
      ['Address', status.address ?? '—'],
      ['Labels', labels || '—'],
      ['Max age', spec.maxAge ?? '—'],
      ['Generation', String(metadata.generation)],
      [
        'Last probe',
        health
          ? `${age(health.lastProbeAt, now)} ago: ${health.ok ? 'ok' : `failed ×${health.consecutiveFailures}`}, ${latency(health.latencyMs)}${health.error ? `, ${health.error}` : ''}`
          : 'not probed yet',
      ],
      [
        'Egress IP',
        `${health?.egressIp ?? status.egress?.ip ?? '—'}${status.egress?.sharedWith.length ? ` (shared with ${status.egress.sharedWith.join(', ')})` : ''}`,
      ],
      ...(metadata.deletionRequestedAt
        ? ([['Deletion requested', `${age(metadata.deletionRequestedAt, now)} ago`]] as [string, string][])
        : []),
    ]),
    table('Conditions', 'conditions', ['Type', 'Status', 'Reason', 'Since'], conditions, 'No conditions yet.'),
    table('Recent events', 'events', ['Age', 'Reason', 'Message'], events, 'No events yet.'),
  );
}

/** The selected proxy is no more (deleted, or never was). */
export function renderGone(name: string, why: string): void {
  byId('detail-title').textContent = `Proxy ${name}`;
  byId('detail-body').replaceChildren(h('p', { class: 'muted', 'data-testid': 'detail-gone' }, why));
}

export function renderNoSelection(): void {
  byId('detail-title').textContent = 'Details';
  byId('detail-body').replaceChildren(
    h('p', { class: 'muted' }, 'Select a proxy by its name to see its conditions and recent events.'),
  );
}
