/** Calls to the real `api` function over HTTP for the fuzz suites, and what its answers should be. */
import { MAX_BODY_BYTES } from '../../../shared/api/handler.js';
import type { Figures } from './figures.js';

/** An HTTP answer: its status, the JSON error if it is one, and the raw text. */
export interface Answer {
  status: number;
  error?: { code: string; message: string; field?: string };
  text: string;
}

/**
 * A client of one API server with one bearer token.
 *
 * @returns `call(method, path, body?, headers?)`: the answer, counted as a request in `figures`
 */
export function apiCaller(base: () => string, token: string, figures: Figures) {
  return async function call(
    method: string,
    path: string,
    body?: string,
    headers: Record<string, string> = {},
  ): Promise<Answer> {
    const response = await fetch(`${base()}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body }),
    });
    const text = await response.text();
    figures.add('requests');
    let error: Answer['error'];
    try {
      error = (JSON.parse(text) as { error?: Answer['error'] }).error;
    } catch {
      error = undefined;
    }
    return { status: response.status, error, text };
  };
}

/**
 * Whether the framework's body parser refuses a text before the function sees it: not JSON, or
 * JSON whose top level is neither an object nor an array (body-parser's strict mode).
 */
export function byFramework(text: string): boolean {
  try {
    return text !== '' && (typeof JSON.parse(text) !== 'object' || JSON.parse(text) === null);
  } catch {
    return true;
  }
}

/** Whether a body is over the API's cap: refused with 413 before its fields (or the token) are looked at. */
export function overCap(text: string): boolean {
  return Buffer.byteLength(text) > MAX_BODY_BYTES;
}

/** What is wrong with the answer to a body over the cap. */
export function capProblems(a: Answer): string[] {
  return a.status === 413 && a.error?.code === 'PayloadTooLarge'
    ? []
    : [`status ${a.status} (${a.error?.code ?? 'no JSON error'}), want 413 PayloadTooLarge`];
}
