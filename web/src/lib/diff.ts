// Line diffs for the side-by-side view: of two texts (live and desired
// YAML), or parsed from a unified diff.

export type Op = { kind: 'same' | 'del' | 'ins'; text: string };

export interface Side {
  no: number;
  text: string;
}

/** One row of a side-by-side diff; 'gap' separates hunks. */
export interface Row {
  kind: 'same' | 'change' | 'del' | 'ins' | 'gap';
  left?: Side;
  right?: Side;
}

/** Beyond this many cells the middle of two texts is shown as replaced. */
const maxCells = 4_000_000;

/** lineDiff computes the line operations turning a into b (LCS). */
export function lineDiff(a: string[], b: string[]): Op[] {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const ops: Op[] = a.slice(0, start).map((text) => ({ kind: 'same', text }));
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  const n = midA.length;
  const m = midB.length;
  if (n * m > maxCells) {
    midA.forEach((text) => ops.push({ kind: 'del', text }));
    midB.forEach((text) => ops.push({ kind: 'ins', text }));
  } else if (n > 0 || m > 0) {
    // lcs[i][j] is the LCS length of midA[i:] and midB[j:].
    const w = m + 1;
    const lcs = new Uint32Array((n + 1) * w);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i * w + j] = midA[i] === midB[j] ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && midA[i] === midB[j]) {
        ops.push({ kind: 'same', text: midA[i] });
        i++;
        j++;
      } else if (i < n && (j === m || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])) {
        ops.push({ kind: 'del', text: midA[i++] });
      } else {
        ops.push({ kind: 'ins', text: midB[j++] });
      }
    }
  }
  a.slice(endA).forEach((text) => ops.push({ kind: 'same', text }));
  return ops;
}

/** sideBySide pairs deletions with the insertions that follow them. */
export function sideBySide(ops: Op[], firstLeft = 1, firstRight = 1): Row[] {
  const rows: Row[] = [];
  let l = firstLeft;
  let r = firstRight;
  for (let i = 0; i < ops.length; ) {
    if (ops[i].kind === 'same') {
      rows.push({ kind: 'same', left: { no: l++, text: ops[i].text }, right: { no: r++, text: ops[i].text } });
      i++;
      continue;
    }
    const dels: string[] = [];
    const inss: string[] = [];
    while (i < ops.length && ops[i].kind !== 'same') {
      if (ops[i].kind === 'del') dels.push(ops[i].text);
      else inss.push(ops[i].text);
      i++;
    }
    for (let k = 0; k < Math.max(dels.length, inss.length); k++) {
      const left = k < dels.length ? { no: l++, text: dels[k] } : undefined;
      const right = k < inss.length ? { no: r++, text: inss[k] } : undefined;
      rows.push({ kind: left && right ? 'change' : left ? 'del' : 'ins', left, right });
    }
  }
  return rows;
}

/** diffTexts is the side-by-side diff of two texts. */
export function diffTexts(a: string, b: string): Row[] {
  const split = (s: string) => (s === '' ? [] : s.replace(/\n$/, '').split('\n'));
  return sideBySide(lineDiff(split(a), split(b)));
}

/** parseUnified reads a unified diff (--- live, +++ desired) into rows. */
export function parseUnified(text: string): Row[] {
  const rows: Row[] = [];
  let ops: Op[] = [];
  let l = 1;
  let r = 1;
  const flush = () => {
    if (ops.length) rows.push(...sideBySide(ops, l, r));
    for (const op of ops) {
      if (op.kind !== 'ins') l++;
      if (op.kind !== 'del') r++;
    }
    ops = [];
  };
  for (const line of text.split('\n')) {
    if (line.startsWith('---') || line.startsWith('+++') || line.startsWith('diff ') || line.startsWith('index ')) continue;
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hunk) {
      flush();
      if (rows.length) rows.push({ kind: 'gap' });
      l = Number(hunk[1]) || 1;
      r = Number(hunk[2]) || 1;
      continue;
    }
    if (line.startsWith('-')) ops.push({ kind: 'del', text: line.slice(1) });
    else if (line.startsWith('+')) ops.push({ kind: 'ins', text: line.slice(1) });
    else if (line.startsWith(' ')) ops.push({ kind: 'same', text: line.slice(1) });
    else if (line === '' || line.startsWith('\\')) continue;
    else ops.push({ kind: 'same', text: line });
  }
  flush();
  return rows;
}

/** changedRows counts the rows that differ. */
export function changedRows(rows: Row[]): number {
  return rows.filter((r) => r.kind !== 'same' && r.kind !== 'gap').length;
}
