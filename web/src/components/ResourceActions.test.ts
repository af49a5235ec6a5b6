import { describe, expect, it } from 'vitest';
import type { ResourceAction } from '../api/types';
import { actionParams, resourceParams } from './ResourceActions';

describe('actionParams', () => {
  const scale: ResourceAction = { name: 'scale', source: 'builtin', params: [{ name: 'replicas', type: 'number', default: '1' }, { name: 'note' }] };
  it.each([
    ['typed values win', { replicas: ' 3 ', note: 'x' }, { replicas: '3', note: 'x' }],
    ['an empty value takes the default', { replicas: '' }, { replicas: '1' }],
    ['unknown names are dropped', { other: 'y' }, { replicas: '1' }],
  ])('%s', (_, values, want) => {
    expect(actionParams(scale, values as Record<string, string>)).toEqual(want);
  });
  it('is undefined for an action without parameters', () => {
    expect(actionParams({ name: 'restart', source: 'builtin' }, {})).toBeUndefined();
  });
});

describe('resourceParams', () => {
  it('leaves out the core group and a cluster-scoped namespace', () => {
    expect(resourceParams({ kind: 'Namespace', name: 'web', group: '', namespace: '' })).toEqual({ group: undefined, kind: 'Namespace', namespace: undefined, name: 'web' });
  });
});
