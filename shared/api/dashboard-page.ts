/** The dashboard page's answer (`GET /`): the HTML with a Content-Security-Policy that allows only its own inline script and styles. */
import { createHash } from 'node:crypto';
import type { ApiResponse } from './http.js';

const NOT_BUILT =
  '<!doctype html><title>egress</title><p>The dashboard was not built: run <code>npm run build</code>.</p>';

/** `'sha256-…'` of each inline `<script>` or `<style>` element's text, as CSP matches them. */
function inlineHashes(html: string, tag: 'script' | 'style'): string[] {
  const elements = html.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'));
  return [...elements].map(
    (m) =>
      `'sha256-${createHash('sha256')
        .update(m[1] ?? '')
        .digest('base64')}'`,
  );
}

/**
 * The policy for `html`: nothing loads but its own inline script and styles (by hash), it talks
 * only to its own origin (the API), and no other site may frame it (clickjacking the delete
 * button). The build inlines everything into one page (scripts/build.mjs), so this is all it needs.
 */
export function dashboardPolicy(html: string): string {
  const hashes = (tag: 'script' | 'style') => inlineHashes(html, tag).join(' ') || "'none'";
  return [
    "default-src 'none'",
    `script-src ${hashes('script')}`,
    `style-src ${hashes('style')}`,
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The page (or a note that it was not built), with its policy. */
export function dashboardPage(html: string | undefined): ApiResponse {
  const body = html ?? NOT_BUILT;
  return {
    status: 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': dashboardPolicy(body),
      'x-frame-options': 'DENY',
    },
    body,
  };
}
