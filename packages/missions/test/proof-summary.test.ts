/** The QA page's proof line: the checks that ran and the codes that rejected earlier bugs. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SabotageAttempt } from '@sluice/proof';
import { proofSummary } from '../src/proof-summary.js';

const checks = { repetitions: 3, isolationRuns: 3, rewrite: 'local names and parameters renamed' };
const attempt = (codes: SabotageAttempt['codes'], accepted = false): SabotageAttempt => ({
  saboteur: 'mutation',
  description: 'a bug',
  accepted,
  reasons: ['why'],
  codes,
});

test('names the codes of every rejected attempt, counted, and never the accepted one', () => {
  const line = proofSummary('accepted: 2 of 2 tests', checks, [
    attempt(['flaky']),
    attempt(['test_passed']),
    attempt(['test_passed', 'flaky']),
    attempt(['test_failed'], true),
  ]);
  assert.equal(
    line,
    'accepted: 2 of 2 tests · checked: each side 3× with its own seed, gold 3× more alone and in reverse order, an equivalent rewrite of gold (local names and parameters renamed) · 3 earlier bug(s) rejected: flaky ×2, test_passed ×2',
  );
});

test('an LLM call that failed counts as saboteur_error; attempts without codes are counted without them', () => {
  const failed: SabotageAttempt = { saboteur: 'llm', description: '', accepted: false, reasons: [], error: 'timed out' };
  assert.equal(
    proofSummary('accepted', undefined, [failed, attempt(['test_passed'])]),
    'accepted · 2 earlier bug(s) rejected: saboteur_error ×1, test_passed ×1',
  );
  assert.equal(proofSummary('accepted', undefined, [attempt(undefined)]), 'accepted · 1 earlier bug(s) rejected');
  assert.equal(
    proofSummary('accepted', { repetitions: 1, isolationRuns: 0, rewrite: null }, []),
    'accepted · checked: each side 1× with its own seed',
  );
});
