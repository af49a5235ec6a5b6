import { describe, expect, it } from 'vitest';
import { changedRows, diffTexts, lineDiff, parseUnified } from './diff';

describe('lineDiff', () => {
  it.each([
    ['equal', ['a', 'b'], ['a', 'b'], '=a =b'],
    ['a change in the middle', ['a', 'b', 'c'], ['a', 'x', 'c'], '=a -b +x =c'],
    ['an insertion', ['a', 'c'], ['a', 'b', 'c'], '=a +b =c'],
    ['a deletion', ['a', 'b', 'c'], ['a', 'c'], '=a -b =c'],
    ['from nothing', [], ['a'], '+a'],
    ['to nothing', ['a'], [], '-a'],
    ['moved lines', ['a', 'b', 'c', 'd'], ['c', 'd', 'a', 'b'], '-a -b =c =d +a +b'],
  ])('%s', (_name, a, b, want) => {
    const sign = { same: '=', del: '-', ins: '+' } as const;
    expect(lineDiff(a, b).map((o) => sign[o.kind] + o.text).join(' ')).toBe(want);
  });
});

describe('diffTexts', () => {
  it('pairs a changed line side by side with line numbers', () => {
    const rows = diffTexts('replicas: 1\nimage: a\n', 'replicas: 3\nimage: a\nextra: x\n');
    expect(rows).toEqual([
      { kind: 'change', left: { no: 1, text: 'replicas: 1' }, right: { no: 1, text: 'replicas: 3' } },
      { kind: 'same', left: { no: 2, text: 'image: a' }, right: { no: 2, text: 'image: a' } },
      { kind: 'ins', left: undefined, right: { no: 3, text: 'extra: x' } },
    ]);
    expect(changedRows(rows)).toBe(2);
  });
  it('shows a missing live object as all inserted', () => {
    expect(diffTexts('', 'a\nb\n').map((r) => r.kind)).toEqual(['ins', 'ins']);
  });
});

describe('parseUnified', () => {
  it('reads hunks with their line numbers', () => {
    const text = `--- live
+++ desired
@@ -1,3 +1,3 @@
 kind: Deployment
-replicas: 1
+replicas: 3
 name: web
@@ -10,2 +10,2 @@
-image: a
+image: b
`;
    const rows = parseUnified(text);
    expect(rows.map((r) => r.kind)).toEqual(['same', 'change', 'same', 'gap', 'change']);
    expect(rows[1]).toEqual({ kind: 'change', left: { no: 2, text: 'replicas: 1' }, right: { no: 2, text: 'replicas: 3' } });
    expect(rows[4].left?.no).toBe(10);
  });
  it('reads an empty diff as no rows', () => {
    expect(parseUnified('')).toEqual([]);
  });
});
