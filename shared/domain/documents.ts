/** Proxy documents in YAML (one or several per file), as `egress apply -f` and the samples use them. */
import { parseAllDocuments } from 'yaml';
import { ValidationError } from '../errors.js';
import { parseProxyRequest, type ApplyRequest } from './proxy.js';

/**
 * Parses every document of a YAML (or JSON) text into apply requests.
 *
 * @throws ValidationError naming the document (`documents[1].spec.port`) and the reason
 */
export function parseProxyDocuments(text: string): ApplyRequest[] {
  const requests: ApplyRequest[] = [];
  parseAllDocuments(text).forEach((doc, i) => {
    if (doc.errors.length > 0)
      throw new ValidationError(`documents[${i}]`, `invalid YAML: ${doc.errors[0]?.message ?? 'parse error'}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return;
    const withAction = typeof value === 'object' && !Array.isArray(value) ? { action: 'apply', ...value } : value;
    try {
      const request = parseProxyRequest(withAction);
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
