import { useEffect, useState } from 'react';
import { appPath, get } from '../api/client';
import type { HealthHistory, HealthTransition } from '../api/types';
import { dateTime, resourceLabel, timeAgo } from '../lib/format';
import { Badge, ErrorMessage, Spinner, THead } from './ui';

/** subjectOf names what changed: the app, or one resource. */
export function subjectOf(t: HealthTransition): string {
  return t.resource ? resourceLabel(t.resource) : 'Application';
}

/** filterTransitions keeps the app's changes, or those of resources whose label contains q. */
export function filterTransitions(ts: HealthTransition[], q: string, appOnly: boolean): HealthTransition[] {
  const needle = q.trim().toLowerCase();
  return ts.filter((t) => (appOnly ? !t.resource : true) && (!needle || subjectOf(t).toLowerCase().includes(needle)));
}

/**
 * HealthTimeline lists the health changes of the app and its resources,
 * newest first, as the workers' compares recorded them.
 */
export function HealthTimeline({ project, app, version }: { project: string; app: string; version: string }) {
  const [data, setData] = useState<HealthHistory | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [q, setQ] = useState('');
  const [appOnly, setAppOnly] = useState(false);
  useEffect(() => {
    let live = true;
    get<HealthHistory>(appPath(project, app, '/health-history')).then(
      (h) => {
        if (!live) return;
        setData(h);
        setError(null);
      },
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [project, app, version]);
  const rows = filterTransitions(data?.transitions ?? [], q, appOnly);
  return (
    <div className="timeline">
      <div className="timeline-bar" role="toolbar" aria-label="Health history filters">
        <input type="search" placeholder="Filter by resource" aria-label="Filter by resource" value={q} onChange={(e) => setQ(e.target.value)} />
        <label>
          <input type="checkbox" checked={appOnly} onChange={(e) => setAppOnly(e.target.checked)} /> Application only
        </label>
      </div>
      <ErrorMessage error={error} what="The health history could not be loaded" />
      {!data && !error && <Spinner />}
      {data && rows.length === 0 && <p className="empty">No health changes recorded.</p>}
      {rows.length > 0 && (
        <div className="table-wrap">
          <table className="table health-timeline">
            <caption className="sr-only">Health changes, newest first</caption>
            <THead cols={['When', 'Resource', 'From', 'To', 'Message']} />
            <tbody>
              {rows.map((t, i) => (
                <tr key={`${t.time}-${subjectOf(t)}-${i}`} data-subject={subjectOf(t)}>
                  <td>
                    <time dateTime={t.time} title={dateTime(t.time)}>
                      {timeAgo(t.time)}
                    </time>
                  </td>
                  <td>{t.resource ? <code>{subjectOf(t)}</code> : <strong>Application</strong>}</td>
                  <td>{t.from ? <Badge kind="health" value={t.from} /> : <span className="muted">—</span>}</td>
                  <td>
                    <Badge kind="health" value={t.to} />
                  </td>
                  <td className="msg">{t.message ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
