/**
 * The one failure classification: what an error from a provider (thrown by a call, reported on an
 * instance, or met observing it) means for its proxy. `decide.ts` and `status.ts` both ask here.
 */
import type { ErrorInfo } from '../errors.js';

export type FailureClass =
  /** Retrying cannot help (`Permanent`, `Validation`): the proxy is Failed for this spec. */
  | { permanent: true; phase: 'Failed'; reason: 'PermanentError'; retrySoon: false }
  /** Worth retrying with backoff; `retrySoon` (`Retryable`) also asks for another look within `pollMs`. */
  | { permanent: false; phase: 'Provisioning'; reason: 'QuotaExceeded' | 'CreateFailed'; retrySoon: boolean };

/**
 * Classifies an error by its code.
 *
 * @example classifyFailure({ code: 'QuotaExceeded' }).reason === 'QuotaExceeded'
 */
export function classifyFailure(error: Pick<ErrorInfo, 'code'>): FailureClass {
  switch (error.code) {
    case 'Permanent':
    case 'Validation':
      return { permanent: true, phase: 'Failed', reason: 'PermanentError', retrySoon: false };
    case 'QuotaExceeded':
      return { permanent: false, phase: 'Provisioning', reason: 'QuotaExceeded', retrySoon: false };
    case 'Retryable':
      return { permanent: false, phase: 'Provisioning', reason: 'CreateFailed', retrySoon: true };
    case 'NotFound':
      return { permanent: false, phase: 'Provisioning', reason: 'CreateFailed', retrySoon: false };
  }
}
