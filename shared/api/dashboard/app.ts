/** The dashboard's entry point: asks for the API token, polls the JSON API every 2 s and renders the fleet. */
import { offerSample, setupActions } from './actions.js';
import { Api, ApiFailure, describeError } from './api-client.js';
import { renderDetail, renderGone, renderNoSelection } from './detail.js';
import { byId } from './dom.js';
import { renderPools } from './pools.js';
import { renderCounts, renderEgressDatabase, renderProviders, renderProxies, renderRelays } from './render.js';
import { renderUsage } from './usage-charts.js';

const TOKEN_KEY = 'egress.dashboard.token';
const POLL_MS = 2000;

let api: Api | undefined;
let selected: string | undefined;
/** Bumped on every sign-in and sign-out: a refresh of an older session renders nothing. */
let session = 0;
let timer: number | undefined;
let inFlight = false;
let again = false;

function signOut(message = ''): void {
  session += 1;
  api = undefined;
  selected = undefined;
  window.clearTimeout(timer);
  sessionStorage.removeItem(TOKEN_KEY);
  byId('dashboard').hidden = true;
  byId('sign-out').hidden = true;
  byId('updated').textContent = '';
  byId('login').hidden = false;
  const error = byId('login-error');
  error.textContent = message;
  error.hidden = !message;
  byId<HTMLInputElement>('token-input').focus();
}

function signIn(token: string): void {
  session += 1;
  api = new Api(token);
  sessionStorage.setItem(TOKEN_KEY, token);
  byId('login').hidden = true;
  byId('dashboard').hidden = false;
  byId('sign-out').hidden = false;
  renderNoSelection();
  refresh();
}

function unauthorised(err: ApiFailure): void {
  signOut(`The API refused the token (${err.message}). Enter a valid one.`);
}

async function poll(client: Api, mine: number): Promise<void> {
  const [proxies, providers, relays, pools] = await Promise.all([
    client.proxies(),
    client.providers(),
    client.relays(),
    client.pools(),
  ]);
  const name = selected;
  let detail;
  let gone: string | undefined;
  if (name) {
    try {
      detail = await client.proxy(name);
    } catch (err) {
      if (!(err instanceof ApiFailure && err.status === 404)) throw err;
      gone = `${name} is gone: it was deleted.`;
    }
  }
  if (mine !== session) return;
  const now = Date.now();
  renderCounts(proxies);
  renderProxies(proxies, now, selected, { select, copy: actions.copy, remove: actions.remove });
  renderProviders(providers.items, now);
  renderEgressDatabase(providers.egressDatabase);
  renderRelays(relays);
  renderPools(pools, { api: () => api, unauthorised, refresh });
  renderUsage(pools, now);
  offerSample(providers.items[0]?.name);
  if (name && name === selected) {
    if (detail) renderDetail(detail, now);
    else if (gone) renderGone(name, gone);
  }
  byId('poll-error').hidden = true;
  byId('updated').textContent = `updated ${new Date(now).toLocaleTimeString()}`;
}

function failedPoll(err: unknown, mine: number): void {
  if (mine !== session) return;
  if (err instanceof ApiFailure && err.status === 401) {
    unauthorised(err);
    return;
  }
  const banner = byId('poll-error');
  banner.textContent = `Could not refresh: ${describeError(err)}. Retrying every ${POLL_MS / 1000} s.`;
  banner.hidden = false;
}

/** Refreshes now (or right after the refresh under way), then every POLL_MS while signed in. */
function refresh(): void {
  const client = api;
  if (!client) return;
  if (inFlight) {
    again = true;
    return;
  }
  window.clearTimeout(timer);
  inFlight = true;
  const mine = session;
  poll(client, mine)
    .catch((err: unknown) => failedPoll(err, mine))
    .finally(() => {
      inFlight = false;
      if (again) {
        again = false;
        refresh();
      } else if (mine === session) timer = window.setTimeout(refresh, POLL_MS);
    })
    .catch((err: unknown) => failedPoll(err, mine));
}

function select(name: string): void {
  selected = name;
  byId('detail-body').replaceChildren();
  byId('detail-title').textContent = `Proxy ${name}`;
  refresh();
  byId('proxy-detail').scrollIntoView({ block: 'nearest' });
}

const actions = setupActions({ api: () => api, unauthorised, refresh });

byId<HTMLFormElement>('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = byId<HTMLInputElement>('token-input');
  const token = input.value.trim();
  if (!token) return;
  input.value = '';
  signIn(token);
});
byId('sign-out').addEventListener('click', () => signOut());
byId('detail-close').addEventListener('click', () => {
  selected = undefined;
  renderNoSelection();
  refresh();
});

const saved = sessionStorage.getItem(TOKEN_KEY);
if (saved) signIn(saved);
else signOut();
