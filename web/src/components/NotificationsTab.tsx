import { useEffect, useState } from 'react';
import { appPath, get } from '../api/client';
import type { NotificationRecord } from '../api/types';
import { dateTime, timeAgo } from '../lib/format';
import { Badge, ErrorMessage, Spinner, THead } from './ui';

/** destination is "service:recipient", or the service alone when it needs no recipient. */
export function destination(r: NotificationRecord): string {
  return r.recipient ? `${r.service}:${r.recipient}` : r.service;
}

/**
 * NotificationsTab lists the app's notification deliveries, newest first:
 * what was sent where, in how many attempts, or why it failed.
 */
export function NotificationsTab({ project, app, version }: { project: string; app: string; version: string }) {
  const [data, setData] = useState<NotificationRecord[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let live = true;
    get<NotificationRecord[] | null>(appPath(project, app, '/notifications')).then(
      (recs) => {
        if (!live) return;
        setData(recs ?? []);
        setError(null);
      },
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [project, app, version]);
  return (
    <div>
      <ErrorMessage error={error} what="The notifications could not be loaded" />
      {!data && !error && <Spinner />}
      {data && data.length === 0 && <p className="empty">No notifications sent.</p>}
      {data && data.length > 0 && (
        <div className="table-wrap">
          <table className="table notifications">
            <caption className="sr-only">Notification deliveries, newest first</caption>
            <THead cols={['When', 'Trigger', 'Template', 'Destination', 'Result', 'Attempts', 'Error']} />
            <tbody>
              {data.map((r) => (
                <tr key={r.key} data-trigger={r.trigger} data-result={r.result}>
                  <td>
                    <time dateTime={r.time} title={dateTime(r.time)}>
                      {timeAgo(r.time)}
                    </time>
                  </td>
                  <td>{r.trigger}</td>
                  <td>{r.template}</td>
                  <td>
                    <code>{destination(r)}</code>
                  </td>
                  <td>{r.result === 'Sent' ? 'Sent' : <Badge kind="phase" value="Failed" />}</td>
                  <td>{r.attempts ?? '—'}</td>
                  <td className="msg">{r.error ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
