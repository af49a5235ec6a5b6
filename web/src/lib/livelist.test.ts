import { describe, expect, it } from 'vitest';
import { StreamTracker } from './livelist';

const page = ['a', 'b', 'c'];

describe('StreamTracker', () => {
  it('updates page rows and ignores the older rows of the first burst', () => {
    const t = new StreamTracker();
    expect(['a', 'b', 'c', 'd', 'e'].map((k) => t.row(k, page, true, 3))).toEqual(['update', 'update', 'update', 'ignore', 'ignore']);
    t.settle();
    // After the burst: a change of an older row is ignored, a new app reloads.
    expect(t.row('d', page, true, 3)).toBe('ignore');
    expect(t.row('new', page, true, 3)).toBe('reload');
    expect(t.row('b', page, true, 3)).toBe('update');
  });
  it('reloads for an app newer than the page, in the burst', () => {
    const t = new StreamTracker();
    expect(t.row('newer', page, true, 3)).toBe('reload');
  });
  it('reloads for any unknown app while the page is not full', () => {
    const t = new StreamTracker();
    expect(t.row('a', ['a'], true, 3)).toBe('update');
    expect(t.row('x', ['a'], true, 3)).toBe('reload');
    expect(t.row('y', [], true, 3)).toBe('reload');
  });
  it('never reloads on later pages', () => {
    const t = new StreamTracker();
    t.settle();
    expect(t.row('new', page, false, 3)).toBe('ignore');
  });
  it('forgets on reset', () => {
    const t = new StreamTracker();
    t.settle();
    t.row('n', page, true, 3);
    t.reset();
    expect(['a', 'b', 'c', 'n'].map((k) => t.row(k, page, true, 3))).toEqual(['update', 'update', 'update', 'ignore']);
  });
});
