import { describe, expect, it } from 'vitest';
import type { AppSetSummary } from '../api/types';
import { applySetEvent, repoName, rolloutControls, rolloutRunning, selectorLabel, setState, splitRef, stepProgress } from './appsets';

describe('repoName', () => {
  it('takes the repository name from a URL', () => {
    expect(repoName('https://git.example/a/b.git/')).toBe('b');
    expect(repoName('git@git.example:a/c.git')).toBe('c');
  });
});

describe('setState', () => {
  it('puts an error first, then deletion, then the first pass', () => {
    expect(setState({ error: 'boom', deleting: true, passes: 3 })).toBe('Error');
    expect(setState({ deleting: true, passes: 3 })).toBe('Deleting');
    expect(setState({ passes: 0 })).toBe('Pending');
    expect(setState({ passes: 2 })).toBe('Ready');
    expect(setState({})).toBe('Ready');
  });
});

describe('rolloutControls', () => {
  it.each([
    ['Progressing', { pause: true, resume: false, abort: true }, true],
    ['Paused', { pause: false, resume: true, abort: true }, true],
    ['Halted', { pause: false, resume: true, abort: true }, true],
    ['Completed', { pause: false, resume: false, abort: false }, false],
    ['Aborted', { pause: false, resume: false, abort: false }, false],
    ['Failed', { pause: false, resume: false, abort: false }, false],
  ])('%s', (phase, want, running) => {
    expect(rolloutControls(phase)).toEqual(want);
    expect(rolloutRunning(phase)).toBe(running);
  });
});

describe('selectorLabel', () => {
  it('writes expressions as a label selector', () => {
    expect(selectorLabel(undefined)).toBe('every app');
    expect(
      selectorLabel([
        { key: 'env', operator: 'In', values: ['dev', 'qa'] },
        { key: 'tier', operator: 'NotIn', values: ['db'] },
        { key: 'canary', operator: 'Exists' },
        { key: 'legacy', operator: 'DoesNotExist' },
      ]),
    ).toBe('env in (dev, qa), tier notin (db), canary, !legacy');
  });
});

describe('stepProgress', () => {
  it('counts the Healthy apps', () => {
    expect(stepProgress([{ phase: 'Healthy' }, { phase: 'Syncing' }, { phase: 'Failed' }])).toEqual({ done: 1, total: 3 });
    expect(stepProgress([])).toEqual({ done: 0, total: 0 });
  });
});

describe('applySetEvent', () => {
  const row = (name: string, apps = 1): AppSetSummary => ({ name, project: 'default', apps, generated: apps });
  it('updates a row in place, adds a new one by name and drops a deleted one', () => {
    let rows = [row('a'), row('c')];
    rows = applySetEvent(rows, 'applicationset', JSON.stringify(row('c', 5)));
    expect(rows).toEqual([row('a'), row('c', 5)]);
    rows = applySetEvent(rows, 'applicationset', JSON.stringify(row('b')));
    expect(rows.map((r) => r.name)).toEqual(['a', 'b', 'c']);
    rows = applySetEvent(rows, 'deleted', '"a"');
    expect(rows.map((r) => r.name)).toEqual(['b', 'c']);
    expect(applySetEvent(rows, 'deleted', '"zz"')).toEqual(rows);
  });
});

describe('splitRef', () => {
  it('splits project and name', () => {
    expect(splitRef('team-a/web')).toEqual({ project: 'team-a', name: 'web' });
    expect(splitRef('web')).toEqual({ project: 'default', name: 'web' });
  });
});
