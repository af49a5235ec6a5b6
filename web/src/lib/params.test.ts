import { describe, expect, it } from 'vitest';
import type { Application, Source } from '../api/types';
import { formOf, mergePatch, toolOf, withOptions, withSource } from './params';

const git = 'https://git.example/apps.git';

describe('toolOf', () => {
  it.each([
    [{ repoURL: git, chart: 'redis' }, 'helm'],
    [{ repoURL: git, path: 'k', kustomize: {} }, 'kustomize'],
    [{ repoURL: git, path: 'd', directory: { recurse: true } }, 'directory'],
    [{ repoURL: git, path: 'x' }, undefined],
  ])('%j is %s', (s, want) => {
    expect(toolOf(s as Source)).toBe(want);
  });
});

describe('withOptions', () => {
  it('edits Helm parameters and values, keeping what the form does not show', () => {
    const s = { repoURL: git, chart: 'redis', helm: { skipCrds: true, parameters: [{ name: 'a', value: '1', forceString: true }] } } as Source;
    const f = { ...formOf(s), parameters: 'a=2\nb = x', values: 'replicas: 3' };
    expect(withOptions(s, 'helm', f)).toEqual({
      repoURL: git,
      chart: 'redis',
      helm: { skipCrds: true, values: 'replicas: 3\n', parameters: [{ name: 'a', value: '2', forceString: true }, { name: 'b', value: 'x' }] },
    });
  });
  it('edits Kustomize images and replicas', () => {
    const s = { repoURL: git, path: 'k', kustomize: { images: ['old:1'] } } as Source;
    const f = { ...formOf(s), images: 'web=web:2\n', replicas: 'web=3' };
    expect(withOptions(s, 'kustomize', f)).toEqual({ repoURL: git, path: 'k', kustomize: { images: ['web=web:2'], replicas: [{ name: 'web', count: 3 }] } });
  });
  it.each([
    ['a parameter without =', 'helm', { parameters: 'novalue' }, 'Helm parameters: "novalue" is not name=value'],
    ['a count that is not a number', 'kustomize', { replicas: 'web=three' }, 'Replicas: the count of web is not a whole number'],
  ] as const)('refuses %s', (_, tool, edit, msg) => {
    const s = { repoURL: git, path: 'p' } as Source;
    expect(() => withOptions(s, tool, { ...formOf(s), ...edit })).toThrow(msg);
  });
});

describe('mergePatch', () => {
  it('sets what changed and nulls what went', () => {
    const a: Application = { name: 'web', source: { repoURL: git, path: 'd', directory: { recurse: true, include: '*.yaml' } } as Source };
    const b = withSource(a, 0, withOptions(a.source!, 'directory', { ...formOf(a.source!), recurse: false, exclude: 'test/*' }));
    expect(mergePatch(a as never, b as never)).toEqual({ source: { directory: { recurse: null, exclude: 'test/*' } } });
  });
  it('sends the whole sources array', () => {
    const a: Application = { name: 'web', sources: [{ repoURL: git, path: 'a' }, { repoURL: git, chart: 'c' }] };
    const b = withSource(a, 1, withOptions(a.sources![1], 'helm', { ...formOf(a.sources![1]), releaseName: 'r' }));
    expect(mergePatch(a as never, b as never)).toEqual({ sources: [{ repoURL: git, path: 'a' }, { repoURL: git, chart: 'c', helm: { releaseName: 'r' } }] });
  });
  it('is empty without a change', () => {
    expect(mergePatch({ a: { b: [1] } }, { a: { b: [1] } })).toEqual({});
  });
});
