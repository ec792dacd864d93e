/** Table test for the one failure classification (`failure.ts`), which decide and status both use. */
import { describe, expect, it } from 'vitest';
import type { ErrorCode } from '../errors.js';
import { classifyFailure } from './failure.js';

const rows: [ErrorCode, { permanent: boolean; phase: string; reason: string; retrySoon: boolean }][] = [
  ['Permanent', { permanent: true, phase: 'Failed', reason: 'PermanentError', retrySoon: false }],
  ['Validation', { permanent: true, phase: 'Failed', reason: 'PermanentError', retrySoon: false }],
  ['QuotaExceeded', { permanent: false, phase: 'Provisioning', reason: 'QuotaExceeded', retrySoon: false }],
  ['Retryable', { permanent: false, phase: 'Provisioning', reason: 'CreateFailed', retrySoon: true }],
  ['NotFound', { permanent: false, phase: 'Provisioning', reason: 'CreateFailed', retrySoon: false }],
];

describe('classifyFailure: one class per error code', () => {
  it.each(rows)('%s', (code, expected) => {
    expect(classifyFailure({ code })).toEqual(expected);
  });
});
