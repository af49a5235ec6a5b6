import { describe, expect, it } from 'vitest';
import type { HealthTransition } from '../api/types';
import { filterTransitions, subjectOf } from './HealthTimeline';

const ts: HealthTransition[] = [
  { time: '2026-01-01T00:02:00Z', resource: { group: 'apps', kind: 'Deployment', namespace: 'web', name: 'web' }, from: 'Healthy', to: 'Degraded' },
  { time: '2026-01-01T00:02:00Z', from: 'Healthy', to: 'Degraded' },
  { time: '2026-01-01T00:01:00Z', resource: { kind: 'Service', namespace: 'web', name: 'front' }, to: 'Healthy' },
];

describe('filterTransitions', () => {
  it.each([
    { name: 'everything', q: '', appOnly: false, want: 3 },
    { name: 'by resource name', q: 'front', appOnly: false, want: 1 },
    { name: 'by kind, any case', q: 'deployment', appOnly: false, want: 1 },
    { name: 'the app only', q: '', appOnly: true, want: 1 },
    { name: 'nothing matches', q: 'nope', appOnly: false, want: 0 },
  ])('$name', ({ q, appOnly, want }) => {
    expect(filterTransitions(ts, q, appOnly)).toHaveLength(want);
  });
  it('names the app and resources', () => {
    expect(subjectOf(ts[1])).toBe('Application');
    expect(subjectOf(ts[2])).toContain('front');
  });
});
