import { describe, expect, it } from 'vitest';
import { StreamTracker } from './livelist';

const page = ['a', 'b', 'c'];

describe('StreamTracker', () => {
  it('updates the rows of the page', () => {
    const t = new StreamTracker();
    expect(['a', 'b', 'c', 'b'].map((k) => t.row(k, page))).toEqual(['update', 'update', 'update', 'update']);
  });
  it('reloads once for a row that came into the page', () => {
    const t = new StreamTracker();
    expect(t.row('new', page)).toBe('reload');
    expect(t.row('new', page)).toBe('ignore');
    expect(t.row('new', [...page, 'new'])).toBe('update');
  });
  it('reloads for a row of an empty page', () => {
    expect(new StreamTracker().row('x', [])).toBe('reload');
  });
  it('forgets on reset', () => {
    const t = new StreamTracker();
    t.row('n', page);
    t.reset();
    expect(t.row('n', page)).toBe('reload');
  });
});
