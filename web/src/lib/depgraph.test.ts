import { describe, expect, it } from 'vitest';
import { depRef, layoutDependencies, withDependents } from './depgraph';

describe('depRef', () => {
  it('qualifies a bare name with the project', () => {
    expect(depRef('default', 'db')).toBe('default/db');
    expect(depRef('default', 'infra/net')).toBe('infra/net');
  });
});

describe('layoutDependencies', () => {
  it('puts dependencies left of what waits for them, by the longest path', () => {
    // web -> api -> db, and web -> db directly: db is two columns left.
    const deps = new Map([
      ['p/web', ['p/api', 'p/db']],
      ['p/api', ['p/db']],
    ]);
    const l = layoutDependencies('p/web', deps);
    expect(l.placed).toEqual([
      { id: 'p/db', col: 0, row: 0 },
      { id: 'p/api', col: 1, row: 0 },
      { id: 'p/web', col: 2, row: 0 },
    ]);
    expect(l.edges).toEqual([
      { from: 'p/api', to: 'p/web' },
      { from: 'p/db', to: 'p/api' },
      { from: 'p/db', to: 'p/web' },
    ]);
    expect([l.cols, l.rows]).toEqual([3, 1]);
  });

  it('stacks siblings in a column, and knows an app without dependencies', () => {
    const l = layoutDependencies('p/web', new Map([['p/web', ['q/net', 'p/db']]]));
    expect(l.placed).toEqual([
      { id: 'p/db', col: 0, row: 0 },
      { id: 'q/net', col: 0, row: 1 },
      { id: 'p/web', col: 1, row: 0 },
    ]);
    expect(layoutDependencies('p/solo', new Map()).placed).toEqual([{ id: 'p/solo', col: 0, row: 0 }]);
  });

  it('cuts a cycle where it closes', () => {
    const l = layoutDependencies('p/a', new Map([['p/a', ['p/b']], ['p/b', ['p/a']]]));
    expect(l.placed.map((p) => p.id)).toEqual(['p/b', 'p/a']);
    expect(l.edges).toEqual([{ from: 'p/b', to: 'p/a' }]);
  });
});

describe('withDependents', () => {
  it('puts the apps that depend on root right of it, each waiting for it', () => {
    const l = withDependents(layoutDependencies('p/db', new Map([['p/db', ['p/net']]])), 'p/db', ['q/web', 'p/api', 'p/api']);
    expect(l.placed).toEqual([
      { id: 'p/net', col: 0, row: 0 },
      { id: 'p/db', col: 1, row: 0 },
      { id: 'p/api', col: 2, row: 0 },
      { id: 'q/web', col: 2, row: 1 },
    ]);
    expect(l.edges).toEqual([
      { from: 'p/net', to: 'p/db' },
      { from: 'p/db', to: 'p/api' },
      { from: 'p/db', to: 'q/web' },
    ]);
    expect([l.cols, l.rows]).toEqual([3, 2]);
  });

  it('leaves a layout without dependents, and a dependent already placed', () => {
    const base = layoutDependencies('p/a', new Map([['p/a', ['p/b']]]));
    expect(withDependents(base, 'p/a', [])).toBe(base);
    expect(withDependents(base, 'p/a', ['p/b'])).toBe(base);
  });
});
