/** The dashboard's Pools card: each pool with its Ready count, spread, members, and a scale action. */
import { ApiError } from '../api-error.js';
import { describeError, type Api, type Pool } from './api-client.js';
import { byId, emptyRow, h, setText, syncRows } from './dom.js';
import { poolSize } from './format.js';

export interface PoolActions {
  api(): Api | undefined;
  unauthorised(err: ApiError): void;
  refresh(): void;
}

function status(text: string, kind: 'ok' | 'error' | 'info'): void {
  const el = byId('pools-status');
  el.textContent = text;
  el.className = `notice ${kind}`;
  el.hidden = !text;
}

/** Applies the pool as the API shows it with a new `replicas` (minAvailable lowered to it when above). */
async function scale(ctx: PoolActions, name: string, input: HTMLInputElement): Promise<void> {
  const api = ctx.api();
  const replicas = Number(input.value);
  if (!api) return;
  if (!Number.isInteger(replicas) || replicas < 0) {
    status(`replicas must be a whole number (0 or more), got "${input.value}"`, 'error');
    return;
  }
  try {
    await api.scalePool(name, replicas);
    status(`pool/${name}: scaling to ${replicas} accepted`, 'ok');
    ctx.refresh();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) ctx.unauthorised(err);
    else status(`pool/${name}: ${describeError(err)}`, 'error');
  }
}

function members(p: Pool): HTMLElement {
  const list = h('ul', { class: 'members' });
  for (const m of p.members)
    list.append(
      h(
        'li',
        { 'data-testid': `pool-member-${m.name}` },
        `${m.name} · ${m.provider} · `,
        h('span', { class: `badge phase-${m.draining ? 'Deleting' : m.phase}` }, m.draining ? 'Draining' : m.phase),
      ),
    );
  return list;
}

export function renderPools(pools: readonly Pool[], ctx: PoolActions): void {
  const body = byId<HTMLTableSectionElement>('pools-body');
  if (!pools.length) {
    emptyRow(body, 5, 'No pools: apply a kind: ProxyPool document.');
    return;
  }
  syncRows(
    body,
    pools,
    (p) => p.metadata.name,
    (p) => {
      const input = h('input', {
        type: 'number',
        min: 0,
        value: p.spec.replicas,
        'aria-label': `replicas of ${p.metadata.name}`,
        'data-testid': `pool-replicas-${p.metadata.name}`,
      });
      const form = h(
        'form',
        {
          class: 'scale',
          onsubmit: (event: Event) => {
            event.preventDefault();
            void scale(ctx, p.metadata.name, input);
          },
        },
        input,
        h('button', { type: 'submit', 'data-testid': `pool-scale-${p.metadata.name}` }, 'Scale'),
      );
      return h(
        'tr',
        { 'data-testid': `pool-row-${p.metadata.name}` },
        h('th', { scope: 'row' }, p.metadata.name),
        h('td', { 'data-col': 'ready', class: 'num' }),
        h('td', { 'data-col': 'spread' }),
        h('td', { 'data-col': 'members' }),
        // An autoscaled pool has no replicas to set: its demand sizes it.
        h('td', {}, p.spec.autoscale ? 'by demand' : form),
      );
    },
    (row, p) => {
      const cell = (col: string) => row.querySelector(`[data-col="${col}"]`) as HTMLElement;
      setText(cell('ready'), poolSize(p));
      setText(
        cell('spread'),
        p.status.entries.map((e) => `${e.provider} ${e.ready}/${e.desired}${e.available ? '' : ' (out)'}`).join(' · '),
      );
      cell('members').replaceChildren(members(p));
    },
  );
}
