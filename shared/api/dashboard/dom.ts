/** Small DOM helpers for the dashboard: element builders, lookups by id, keyed table rows. */

type Child = Node | string | number | null | undefined | false;
type Attr = string | number | boolean | null | undefined | ((event: Event) => void);

/** `h('button', { type: 'button', onclick: fn }, 'Delete')`: attributes, `on*` listeners, children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, Attr> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (value === true) el.setAttribute(key, '');
    else if (value !== false && value !== null && value !== undefined) el.setAttribute(key, String(value));
  }
  for (const c of children) {
    if (c !== null && c !== undefined && c !== false) el.append(typeof c === 'number' ? String(c) : c);
  }
  return el;
}

/** The element with this id; a missing one is a bug in index.html. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`dashboard: no element #${id}`);
  return el as T;
}

/** Sets text only when it changed, so a poll that changes nothing touches nothing. */
export function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

/**
 * Brings `body`'s rows in line with `items`, one row per key, reusing existing rows (focus and
 * selection survive a refresh). `create` builds a row; `update` fills it from the item.
 */
export function syncRows<T>(
  body: HTMLTableSectionElement,
  items: readonly T[],
  key: (item: T) => string,
  create: (item: T) => HTMLTableRowElement,
  update: (row: HTMLTableRowElement, item: T) => void,
): void {
  const existing = new Map<string, HTMLTableRowElement>();
  for (const row of Array.from(body.rows)) {
    if (row.dataset['key'] !== undefined) existing.set(row.dataset['key'], row);
    else row.remove();
  }
  items.forEach((item, index) => {
    const k = key(item);
    let row = existing.get(k);
    existing.delete(k);
    if (!row) {
      row = create(item);
      row.dataset['key'] = k;
    }
    update(row, item);
    if (body.rows[index] !== row) body.insertBefore(row, body.rows[index] ?? null);
  });
  for (const row of existing.values()) row.remove();
}

/** A single full-width row saying the table is empty. */
export function emptyRow(body: HTMLTableSectionElement, columns: number, text: string): void {
  body.replaceChildren(h('tr', {}, h('td', { colspan: columns, class: 'muted empty' }, text)));
}
