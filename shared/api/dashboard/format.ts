/** Pure helpers of the dashboard (no DOM): phases, ages, latencies, the apply form's documents. */
import { parseAllDocuments } from 'yaml';
import { PHASES } from '../../domain/phases.js';
import type { ApiPool } from '../schema.js';

/** `45s`, `12m`, `3h 5m`, `2d 4h`: how long ago `iso` was (empty when unknown). */
export function age(iso: string | null | undefined, now: number): string {
  if (!iso) return '';
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return '';
  return duration(Math.max(0, Math.round((now - at) / 1000)));
}

export function duration(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  const m = Math.floor(seconds / 60);
  if (m < 60) return `${m}m`;
  const hours = Math.floor(m / 60);
  if (hours < 24) return m % 60 ? `${hours}h ${m % 60}m` : `${hours}h`;
  return hours % 24 ? `${Math.floor(hours / 24)}d ${hours % 24}h` : `${Math.floor(hours / 24)}d`;
}

export function latency(ms: number | null | undefined): string {
  return typeof ms === 'number' ? `${Math.round(ms)} ms` : '—';
}

/** Proxies per phase, every phase present (zero when none); unknown phases are counted too. */
export function countByPhase(phases: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>(PHASES.map((p) => [p, 0]));
  for (const phase of phases) counts.set(phase, (counts.get(phase) ?? 0) + 1);
  return counts;
}

/**
 * A pool's Ready members over the members it wants now: `3/6`. An autoscaled pool wants what the
 * autoscaler last decided (`status.desiredReplicas`), shown with its bounds and the demand it read.
 */
export function poolSize(p: Pick<ApiPool, 'spec' | 'status'>): string {
  const a = p.spec.autoscale;
  const wanted = p.spec.replicas ?? p.status.desiredReplicas ?? a?.minReplicas ?? 0;
  const size = `${p.status.readyReplicas}/${wanted}`;
  if (!a) return size;
  const d = p.status.demand;
  const demand = d ? `; ${d.inFlight} in flight, ${d.waiting} waiting` : '';
  return `${size} (autoscale ${a.minReplicas}–${a.maxReplicas}${demand})`;
}

/** The sample the apply form starts with. */
export function sampleDocument(provider: string, name = 'sample-1'): string {
  return [
    '# Proxy documents: YAML (--- between them) or JSON.',
    'apiVersion: egress.dev/v1',
    'kind: Proxy',
    'metadata:',
    `  name: ${name}`,
    '  labels: { team: demo }',
    'spec:',
    `  provider: ${provider}`,
    '  maxAge: 24h',
    '',
  ].join('\n');
}

/** A document of the apply form, with the name its `PUT` goes to. */
export interface FormDocument {
  name: string;
  body: Record<string, unknown>;
}

/**
 * The Proxy documents in `text`: a JSON object or array, or YAML with one document per `---`.
 * Throws an Error naming the line (YAML) or the document without `metadata.name`.
 */
export function parseFormDocuments(text: string): FormDocument[] {
  const trimmed = text.trim();
  let values: unknown[];
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch (err) {
      throw new Error(`not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
    }
    values = Array.isArray(parsed) ? parsed : [parsed];
  } else {
    values = [];
    for (const doc of parseAllDocuments(text)) {
      const error = doc.errors[0];
      if (error) throw new Error(`not valid YAML: ${error.message.split('\n')[0] ?? error.message}`);
      const value: unknown = doc.toJS();
      if (value !== null && value !== undefined) values.push(value);
    }
  }
  if (values.length === 0) throw new Error('no document: paste a Proxy in YAML or JSON');
  return values.map((value, i) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new Error(`document ${i + 1}: must be an object (a Proxy)`);
    const body = value as Record<string, unknown>;
    const metadata = body['metadata'] as { name?: unknown } | undefined;
    const name = typeof metadata === 'object' && metadata !== null ? metadata.name : undefined;
    if (typeof name !== 'string' || !name)
      throw new Error(`document ${i + 1}: metadata.name is required (it names the proxy in the URL)`);
    return { name, body };
  });
}
