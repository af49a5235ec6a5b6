import { changedRows, type Row } from '../lib/diff';

const mark: Record<Row['kind'], [string, string]> = {
  same: ['', ''],
  change: ['changed', 'changed'],
  del: ['removed', ''],
  ins: ['', 'added'],
  gap: ['', ''],
};

/**
 * DiffView shows a side-by-side diff: live (the cluster) on the left,
 * desired (Git) on the right; changed lines are highlighted and marked with
 * a sign and, for screen readers, a word.
 */
export function DiffView({ rows, leftTitle = 'Live (cluster)', rightTitle = 'Desired (Git)' }: { rows: Row[]; leftTitle?: string; rightTitle?: string }) {
  const n = changedRows(rows);
  return (
    <div className="diff" data-changed={n}>
      <p className="diff-summary" role="status">
        {n === 0 ? 'No differences.' : `${n} changed line${n === 1 ? '' : 's'}.`}
      </p>
      <div className="table-wrap">
        <table className="diff-table">
          <colgroup>
            <col className="diff-no" />
            <col className="diff-text" />
            <col className="diff-no" />
            <col className="diff-text" />
          </colgroup>
          <thead>
            <tr>
              <th scope="col" colSpan={2}>
                − {leftTitle}
              </th>
              <th scope="col" colSpan={2}>
                + {rightTitle}
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r, i) =>
              r.kind === 'gap' ? (
                <tr key={i} className="diff-gap">
                  <td colSpan={4}>⋯</td>
                </tr>
              ) : (
                <tr key={i} className={`diff-${r.kind}`}>
                  <td className="diff-no">{r.left?.no}</td>
                  <td className={r.kind === 'change' || r.kind === 'del' ? 'diff-l diff-hl' : 'diff-l'}>
                    {mark[r.kind][0] && <span className="sr-only">{mark[r.kind][0]}: </span>}
                    <span aria-hidden="true" className="diff-sign">
                      {r.left && r.kind !== 'same' ? '−' : ' '}
                    </span>
                    {r.left?.text}
                  </td>
                  <td className="diff-no">{r.right?.no}</td>
                  <td className={r.kind === 'change' || r.kind === 'ins' ? 'diff-r diff-hl' : 'diff-r'}>
                    {mark[r.kind][1] && <span className="sr-only">{mark[r.kind][1]}: </span>}
                    <span aria-hidden="true" className="diff-sign">
                      {r.right && r.kind !== 'same' ? '+' : ' '}
                    </span>
                    {r.right?.text}
                  </td>
                </tr>
              ),
            )}
          </tbody>
        </table>
      </div>
    </div>
  );
}
