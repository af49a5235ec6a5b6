import { describe, expect, it } from 'vitest';
import type { AppCondition } from '../api/types';
import { ordered, severity, summary, worst } from './conditions';

const c = (type: string, message = type): AppCondition => ({ type, message });

describe('severity', () => {
  it.each([
    { type: 'ExcludedResourceWarning', want: 'warning' },
    { type: 'ComparisonError', want: 'error' },
    { type: 'SyncError', want: 'error' },
    { type: 'OrphanedResourceWarning', want: 'warning' },
    { type: 'ErrorsSoon', want: 'info' },
    { type: 'Custom', want: 'info' },
  ])('$type is $want', ({ type, want }) => {
    expect(severity(type)).toBe(want);
  });
});

describe('ordered', () => {
  it('puts errors first, then warnings, keeping the order within each', () => {
    const got = ordered([c('A'), c('ExcludedResourceWarning', 'w1'), c('ComparisonError'), c('ExcludedResourceWarning', 'w2')]);
    expect(got.map((x) => x.message)).toEqual(['ComparisonError', 'w1', 'w2', 'A']);
  });
});

describe('summary and worst', () => {
  it.each([
    { name: 'none', conds: [], text: '', worst: undefined },
    { name: 'one warning', conds: [c('ExcludedResourceWarning')], text: '1 warning', worst: 'warning' },
    { name: 'mixed', conds: [c('ExcludedResourceWarning'), c('ComparisonError'), c('ExcludedResourceWarning'), c('Other')], text: '1 error, 2 warnings, 1 condition', worst: 'error' },
  ])('$name', ({ conds, text, worst: w }) => {
    expect(summary(conds)).toBe(text);
    expect(worst(conds)).toBe(w);
  });
});
