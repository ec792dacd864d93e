/** `egress describe proxy`: a proxy's spec, status, conditions and recent events, laid out like kubectl describe. */
import type { ApiProxyWithEvents } from '../shared/api/schema.js';
import { NONE, age, alignRows } from './format.js';

const KEY_WIDTH = 14;

function field(key: string, value: string, indent = ''): string {
  return `${indent}${`${key}:`.padEnd(KEY_WIDTH - indent.length)}${value}`;
}

function pairs(record: Record<string, unknown>): string {
  const entries = Object.entries(record);
  if (entries.length === 0) return NONE;
  return entries.map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(',');
}

function when(iso: string | null | undefined, now: number): string {
  return iso ? `${iso} (${age(iso, now)} ago)` : NONE;
}

function section(title: string, header: string[], rows: string[][]): string[] {
  if (rows.length === 0) return [`${title}:`.padEnd(KEY_WIDTH) + NONE];
  const underline = header.map((h) => '-'.repeat(h.length));
  return [`${title}:`, ...alignRows([header, underline, ...rows]).map((l) => `  ${l}`)];
}

/**
 * Renders one proxy for people. Events come newest first from the API and are shown oldest first,
 * as kubectl does, so the latest is next to the prompt.
 *
 * @param now - the current time (ages are relative to it)
 * @returns the text, ending in a newline
 */
export function describeProxy(p: ApiProxyWithEvents, now: number): string {
  const { metadata, spec, status } = p;
  const lines = [
    field('Name', metadata.name),
    field('Labels', pairs(metadata.labels)),
    field('Provider', spec.provider),
    field('Placement', pairs(spec.placement)),
    field('Port', spec.port === 0 ? '0 (chosen by the provider)' : String(spec.port)),
    field('Max Age', spec.maxAge ?? NONE),
    field('Generation', metadata.generation === undefined ? NONE : String(metadata.generation)),
    field('Created', when(metadata.createdAt, now)),
  ];
  if (metadata.deletionRequestedAt) lines.push(field('Deleting', when(metadata.deletionRequestedAt, now)));
  lines.push(field('Phase', status.phase), field('Address', status.address ?? NONE));
  const instance = status.instance;
  if (instance) {
    lines.push(
      'Instance:',
      field('Name', instance.name ?? NONE, '  '),
      field('State', instance.state ?? NONE, '  '),
      field('Created', when(instance.createdAt, now), '  '),
    );
  } else {
    lines.push(field('Instance', NONE));
  }
  const health = status.health;
  if (health) {
    lines.push(
      'Health:',
      field('OK', String(health.ok), '  '),
      field('Latency', typeof health.latencyMs === 'number' ? `${Math.round(health.latencyMs)}ms` : NONE, '  '),
      field('Egress IP', health.egressIp ?? NONE, '  '),
      field('Last Probe', when(health.lastProbeAt, now), '  '),
      field('Failures', String(health.consecutiveFailures ?? 0), '  '),
    );
    if (health.error) lines.push(field('Error', health.error, '  '));
  } else {
    lines.push(field('Health', NONE));
  }
  lines.push(
    ...section(
      'Conditions',
      ['Type', 'Status', 'Reason', 'Age', 'Message'],
      status.conditions.map((c) => [c.type, c.status, c.reason || NONE, age(c.lastTransitionTime, now), c.message]),
    ),
    ...section(
      'Events',
      ['Type', 'Reason', 'Age', 'Message'],
      [...p.events].reverse().map((e) => [e.type, e.reason, age(e.at, now), e.message]),
    ),
  );
  return `${lines.join('\n')}\n`;
}
