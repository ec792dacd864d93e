/** The dashboard's actions: apply documents from the form, delete a proxy after a confirm step, copy a proxy URL. */
import { ApiError } from '../api-error.js';
import { describeError, type Api } from './api-client.js';
import { byId, h } from './dom.js';
import { parseFormDocuments, sampleDocument } from './format.js';

export interface ActionContext {
  /** The signed-in client, or undefined when signed out. */
  api(): Api | undefined;
  /** Called with a 401: back to the token form. */
  unauthorised(err: ApiError): void;
  /** Asks for a refresh now (an action changed the fleet). */
  refresh(): void;
}

function show(id: string, text: string, kind: 'ok' | 'error' | 'info'): void {
  const el = byId(id);
  el.textContent = text;
  el.className = `notice ${kind}`;
  el.hidden = !text;
}

function failed(ctx: ActionContext, err: unknown): boolean {
  if (err instanceof ApiError && err.status === 401) {
    ctx.unauthorised(err);
    return true;
  }
  return false;
}

let sampleTouched = false;

/** Puts the sample in the form, for the first provider, unless the user edited it. */
export function offerSample(provider: string | undefined): void {
  const area = byId<HTMLTextAreaElement>('apply-document');
  area.dataset['provider'] = provider ?? 'local';
  const sample = sampleDocument(area.dataset['provider']);
  if (!sampleTouched && area.value !== sample) area.value = sample;
}

async function apply(ctx: ActionContext): Promise<void> {
  const api = ctx.api();
  if (!api) return;
  const list = byId<HTMLUListElement>('apply-results');
  list.replaceChildren();
  show('apply-error', '', 'info');
  let documents;
  try {
    documents = parseFormDocuments(byId<HTMLTextAreaElement>('apply-document').value);
  } catch (err) {
    show('apply-error', describeError(err), 'error');
    return;
  }
  for (const doc of documents) {
    try {
      const accepted = await api.apply(doc.name, doc.body);
      list.append(h('li', { class: 'ok' }, `${accepted.name}: accepted (message ${accepted.messageId})`));
    } catch (err) {
      if (failed(ctx, err)) return;
      list.append(h('li', { class: 'error', role: 'alert' }, `${doc.name}: ${describeError(err)}`));
    }
  }
  ctx.refresh();
}

async function remove(ctx: ActionContext, name: string): Promise<void> {
  const api = ctx.api();
  if (!api) return;
  show('action-status', `Deleting ${name}…`, 'info');
  try {
    await api.remove(name);
    show('action-status', `Deletion of ${name} accepted: it goes once its instance is gone.`, 'ok');
  } catch (err) {
    if (!failed(ctx, err)) show('action-status', `Could not delete ${name}: ${describeError(err)}`, 'error');
  }
  ctx.refresh();
}

/** Opens the confirm dialog; the deletion starts only on its Delete button. */
export function confirmDelete(name: string): void {
  const dialog = byId<HTMLDialogElement>('delete-dialog');
  byId('delete-name').textContent = name;
  dialog.dataset['name'] = name;
  dialog.returnValue = '';
  dialog.showModal();
  byId<HTMLButtonElement>('cancel-delete').focus();
}

function showFallback(url: string): void {
  const box = byId('copy-fallback');
  const input = byId<HTMLInputElement>('copy-fallback-url');
  input.value = url;
  box.hidden = false;
  input.focus();
  input.select();
}

async function copy(ctx: ActionContext, name: string): Promise<void> {
  const api = ctx.api();
  if (!api) return;
  byId('copy-fallback').hidden = true;
  let url: string | undefined;
  try {
    url = (await api.discovery()).find((e) => e.name === name)?.url;
  } catch (err) {
    if (!failed(ctx, err)) show('action-status', `Could not get the URL of ${name}: ${describeError(err)}`, 'error');
    return;
  }
  if (!url) {
    show('action-status', `${name} has no URL: discovery lists only Ready proxies.`, 'error');
    return;
  }
  try {
    if (!navigator.clipboard) throw new Error('no clipboard here');
    await navigator.clipboard.writeText(url);
    show('action-status', `Copied the URL of ${name} (it carries the proxy's credentials).`, 'ok');
  } catch {
    show(
      'action-status',
      `The browser did not allow copying: the URL of ${name} is below; copy it from there.`,
      'info',
    );
    showFallback(url);
  }
}

/** Wires the apply form, the delete dialog and the copy fallback; returns the per-row actions. */
export function setupActions(ctx: ActionContext): { copy: (name: string) => void; remove: (name: string) => void } {
  const area = byId<HTMLTextAreaElement>('apply-document');
  area.addEventListener('input', () => (sampleTouched = true));
  byId('apply-reset').addEventListener('click', () => {
    sampleTouched = false;
    area.value = sampleDocument(area.dataset['provider'] ?? 'local');
  });
  byId<HTMLFormElement>('apply-form').addEventListener('submit', (event) => {
    event.preventDefault();
    apply(ctx).catch((err: unknown) => show('apply-error', describeError(err), 'error'));
  });
  const dialog = byId<HTMLDialogElement>('delete-dialog');
  dialog.addEventListener('close', () => {
    const name = dialog.dataset['name'];
    if (dialog.returnValue === 'confirm' && name) {
      remove(ctx, name).catch((err: unknown) => show('action-status', describeError(err), 'error'));
    }
  });
  byId('copy-fallback-close').addEventListener('click', () => (byId('copy-fallback').hidden = true));
  return {
    copy: (name) => {
      copy(ctx, name).catch((err: unknown) => show('action-status', describeError(err), 'error'));
    },
    remove: confirmDelete,
  };
}
