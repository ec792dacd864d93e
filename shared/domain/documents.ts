/** Proxy and ProxyPool documents in YAML (one or several per file), as `egress apply -f` and the samples use them. */
import { parseAllDocuments } from 'yaml';
import { ValidationError } from '../errors.js';
import { isPoolRequest, parsePoolRequest, type PoolApplyRequest } from './pool.js';
import { parseProxyRequest, type ApplyRequest } from './proxy.js';

/** One document to apply: a Proxy or a ProxyPool. */
export type ApplyDocument = ApplyRequest | PoolApplyRequest;

/**
 * Parses every document of a YAML (or JSON) text into apply requests, Proxy or ProxyPool by `kind`.
 *
 * @throws ValidationError naming the document (`documents[1].spec.port`) and the reason
 */
export function parseDocuments(text: string): ApplyDocument[] {
  const requests: ApplyDocument[] = [];
  parseAllDocuments(text).forEach((doc, i) => {
    if (doc.errors.length > 0)
      throw new ValidationError(`documents[${i}]`, `invalid YAML: ${doc.errors[0]?.message ?? 'parse error'}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return;
    const withAction = typeof value === 'object' && !Array.isArray(value) ? { action: 'apply', ...value } : value;
    try {
      const request = isPoolRequest(withAction) ? parsePoolRequest(withAction) : parseProxyRequest(withAction);
      if (request.action !== 'apply')
        throw new ValidationError('action', 'a document to apply must not say action: delete');
      requests.push(request);
    } catch (err) {
      if (err instanceof ValidationError) throw new ValidationError(`documents[${i}].${err.field}`, err.reason);
      throw err;
    }
  });
  return requests;
}

/**
 * Parses a text that may hold only Proxy documents (the provider samples).
 *
 * @throws ValidationError as {@link parseDocuments}, and for a ProxyPool document
 */
export function parseProxyDocuments(text: string): ApplyRequest[] {
  return parseDocuments(text).map((d, i) => {
    if (d.kind !== 'Proxy') throw new ValidationError(`documents[${i}].kind`, 'must be "Proxy" here');
    return d;
  });
}
