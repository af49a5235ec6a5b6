import { Fragment, useEffect, useState } from 'react';
import { appPath, get } from '../api/client';
import type { SyncEvents, SyncList, SyncRecord, SyncSummary } from '../api/types';
import { dateTime, duration, shortSHA, syncNumber, timeAgo } from '../lib/format';
import type { Allowed } from '../session';
import { Icon } from './icons';
import { Badge, Button, CommitMessage, ErrorMessage, Pager, Spinner, THead } from './ui';

const HISTORY_PAGE = 20;

/** The result of a closed sync workflow, by its visibility status. */
function result(r: SyncRecord, s?: SyncSummary): string {
  if (s?.phase) return s.phase;
  switch (r.status) {
    case 'Completed':
      return 'Succeeded';
    case 'Running':
      return 'Running';
    case 'Terminated':
    case 'Canceled':
      return 'Terminated';
    default:
      return r.status === 'Failed' || r.status === 'TimedOut' ? 'Failed' : r.status;
  }
}

/** eventName turns EVENT_TYPE_WORKFLOW_EXECUTION_STARTED into WorkflowExecutionStarted. */
function eventName(t = ''): string {
  return t
    .replace(/^EVENT_TYPE_/, '')
    .toLowerCase()
    .replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase());
}

/**
 * SyncEventList shows a sync's Temporal event history, read through the
 * API: the Temporal UI cannot show a sync that only the archive keeps.
 */
function SyncEventList({ url }: { url: string }) {
  const [ev, setEv] = useState<SyncEvents | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let live = true;
    get<SyncEvents>(url).then(
      (e) => live && setEv(e),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [url]);
  return (
    <div className="sync-events">
      <ErrorMessage error={error} what="The sync's events could not be loaded" />
      {!ev && !error && <Spinner />}
      {ev && (
        <ol aria-label={`Events of sync ${syncNumber(ev.id)}, read from the ${ev.source === 'archived' ? 'archive' : 'Temporal'}`}>
          {ev.events.map((e, i) => {
            const { eventId, eventTime, eventType, ...attrs } = e;
            return (
              <li key={eventId ?? i}>
                <details>
                  <summary>
                    {eventId} {eventName(eventType)}{' '}
                    {eventTime && (
                      <time dateTime={eventTime} className="muted">
                        {dateTime(eventTime)}
                      </time>
                    )}
                  </summary>
                  <pre>{JSON.stringify(attrs, null, 2)}</pre>
                </details>
              </li>
            );
          })}
        </ol>
      )}
    </div>
  );
}

/**
 * HistoryTab lists every sync of the app, newest first, a page at a time:
 * those Temporal retains, then those only its archive keeps, with the
 * details the app keeps for recent syncs.
 */
export function HistoryTab({
  project,
  app,
  recent,
  canRollback,
  onRollback,
  version,
}: {
  project: string;
  app: string;
  recent: SyncSummary[];
  canRollback: Allowed;
  onRollback: (target: { id: string; revision?: string; sha?: string }) => void;
  version: string;
}) {
  const [cursors, setCursors] = useState<string[]>(['']);
  const [page, setPage] = useState<SyncList | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [open, setOpen] = useState<string | null>(null);
  const cursor = cursors[cursors.length - 1];
  useEffect(() => {
    let live = true;
    get<SyncList>(appPath(project, app, '/syncs', { limit: String(HISTORY_PAGE), cursor: cursor || undefined })).then(
      (p) => {
        if (!live) return;
        setPage(p);
        setError(null);
      },
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [project, app, cursor, version]);
  const byId = new Map(recent.map((s) => [s.id, s]));
  // Syncs the app knows but visibility does not list yet come first.
  const rows: { rec: SyncRecord; sum?: SyncSummary }[] = (page?.items ?? []).map((rec) => ({ rec, sum: byId.get(rec.id) }));
  if (cursors.length === 1) {
    const listed = new Set(rows.map((r) => r.rec.id));
    const missing = recent.filter((s) => !listed.has(s.id)).map((s) => ({ rec: { id: s.id, status: s.phase, started: s.startedAt ?? '', finished: s.finishedAt }, sum: s }));
    rows.unshift(...missing);
    rows.sort((a, b) => Number(b.rec.id.split('/').pop()) - Number(a.rec.id.split('/').pop()));
  }
  return (
    <div>
      <ErrorMessage error={error} what="The sync history could not be loaded" />
      {!page && !error && <Spinner />}
      {page && rows.length === 0 && <p className="empty">No syncs yet.</p>}
      {rows.length > 0 && (
        <div className="table-wrap">
          <table className="table history">
            <caption className="sr-only">Syncs, newest first</caption>
            <THead cols={['Sync', 'Revision', 'Initiator', 'Result', 'Started', 'Duration', 'Temporal']} actions />
            <tbody>
              {rows.map(({ rec, sum }) => {
                const res = result(rec, sum);
                const sha = sum?.sha || rec.sha;
                const revision = sum?.revision || rec.revision;
                const rev = sha || revision;
                const initiator = sum?.initiator || rec.initiator;
                return (
                  <Fragment key={rec.id}>
                    <tr data-sync={rec.id} data-source={rec.source}>
                      <td>
                        {syncNumber(rec.id)}
                        {rec.source === 'archived' && (
                          <div className="muted" title="Temporal's retention has passed: the sync is read from its archive">
                            archived
                          </div>
                        )}
                      </td>
                      <td>
                        {rev ? <code title={rev}>{shortSHA(rev)}</code> : <span className="muted">—</span>}
                        {revision && sha && revision !== sha && <span className="muted"> ({revision})</span>}
                        <CommitMessage message={sum?.revisionMessage || rec.revisionMessage} />
                      </td>
                      <td>{initiator || <span className="muted">—</span>}</td>
                      <td>
                        <Badge kind="phase" value={res} />
                        {sum?.message && <div className="msg">{sum.message}</div>}
                      </td>
                      <td>
                        <time dateTime={rec.started} title={dateTime(rec.started)}>
                          {timeAgo(rec.started)}
                        </time>
                      </td>
                      <td>{duration(rec.started, rec.finished || sum?.finishedAt)}</td>
                      <td>
                        {rec.temporalURL ? (
                          <a href={rec.temporalURL} target="_blank" rel="noreferrer">
                            Workflow <Icon name="external" size={12} />
                            <span className="sr-only"> (Temporal UI, opens in a new tab)</span>
                          </a>
                        ) : rec.eventsURL ? (
                          <Button onClick={() => setOpen(open === rec.id ? null : rec.id)} aria-expanded={open === rec.id}>
                            Events
                          </Button>
                        ) : (
                          <span className="muted">—</span>
                        )}
                      </td>
                      <td>
                        {res === 'Succeeded' && (
                          <Button icon="undo" allowed={canRollback} denied="applications, rollback" hideDenied onClick={() => onRollback({ id: rec.id, revision, sha })}>
                            Rollback to this
                          </Button>
                        )}
                      </td>
                    </tr>
                    {open === rec.id && rec.eventsURL && (
                      <tr className="sync-events-row">
                        <td colSpan={8}>
                          <SyncEventList url={rec.eventsURL} />
                        </td>
                      </tr>
                    )}
                  </Fragment>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <Pager
        page={cursors.length - 1}
        hasNext={!!page?.next}
        label="History pages"
        prevLabel="Newer"
        nextLabel="Older"
        onPrev={() => setCursors((c) => c.slice(0, -1))}
        onNext={() => page?.next && setCursors((c) => [...c, page.next!])}
      />
    </div>
  );
}
