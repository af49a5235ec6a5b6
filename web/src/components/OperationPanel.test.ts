import { describe, expect, it } from 'vitest';
import { progress } from './OperationPanel';

describe('progress', () => {
  const step = { phase: 'Sync', wave: 0, resources: 4 };
  const res = (n: number, phase = 'Sync', wave = 0) => Array.from({ length: n }, (_, i) => ({ kind: 'ConfigMap', name: `c${i}`, action: 'created', phase, wave }));
  it.each([
    ['not started', { syncID: 's', phase: 'Running' }, 0],
    ['half of the only step', { syncID: 's', phase: 'Running', steps: 1, stepIndex: 0, step, resources: res(2) }, 50],
    ['second of two steps, none done', { syncID: 's', phase: 'Running', steps: 2, stepIndex: 1, step: { phase: 'PostSync', wave: 0, resources: 1 }, resources: res(4) }, 50],
    ['succeeded', { syncID: 's', phase: 'Succeeded', steps: 2, stepIndex: 1 }, 100],
  ])('%s', (_name, op, want) => {
    expect(progress(op)).toBe(want);
  });
});
