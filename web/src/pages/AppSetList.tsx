import { useCallback, useEffect, useState } from 'react';
import { del, get, post, query } from '../api/client';
import { useEventStream } from '../api/sse';
import type { AppSetDeleteResult, AppSetList as AppSetListT, AppSetSummary } from '../api/types';
import { Icon } from '../components/icons';
import { Badge, Button, Dialog, DialogActions, ErrorMessage, Field, Spinner, THead, useAction, useToast } from '../components/ui';
import { appSetPath, appSetURL, applySetEvent, repoName, setState } from '../lib/appsets';
import { Link } from '../router';
import { useCan } from '../session';

/** The set list: live over its event stream, with refresh and delete per set. */
export function AppSetList() {
  const [rows, setRows] = useState<AppSetSummary[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [deleting, setDeleting] = useState<string | null>(null);
  useEffect(() => {
    const ac = new AbortController();
    get<AppSetListT>('/api/v1/applicationsets', { signal: ac.signal }).then(
      (r) => setRows(r.items),
      (e) => !ac.signal.aborted && setError(e),
    );
    return () => ac.abort();
  }, []);
  const onEvent = useCallback((event: string, data: string) => setRows((rs) => applySetEvent(rs ?? [], event, data)), []);
  const live = useEventStream(rows ? '/api/v1/stream/applicationsets' : null, ['applicationset', 'deleted'], onEvent);

  return (
    <main id="main" className="page">
      <div className="page-head">
        <h1>ApplicationSets</h1>
        <span className={`live live-${live}`} role="status" title="Live updates over Server-Sent Events">
          <Icon name="live" size={10} /> {live === 'live' ? 'Live' : live === 'closed' ? 'Not live' : 'Connecting…'}
        </span>
      </div>
      <ErrorMessage error={error} what="The sets could not be listed" />
      <div className="table-wrap">
        <table className="table appsets" aria-describedby="appsets-caption">
          <caption id="appsets-caption" className="sr-only">
            ApplicationSets, by name
          </caption>
          <THead cols={['Name', 'Project', 'Generators', 'Apps', 'Status']} actions />
          <tbody>
            {rows?.map((r) => (
              <SetRow key={r.name} row={r} onDelete={() => setDeleting(r.name)} />
            ))}
          </tbody>
        </table>
        {rows && rows.length === 0 && (
          <p className="empty">
            No ApplicationSets yet. Create one with <code>windlass appset create</code> or <code>POST /api/v1/applicationsets</code>.
          </p>
        )}
        {!rows && !error && <Spinner />}
      </div>
      {deleting && (
        <DeleteSetDialog
          name={deleting}
          onClose={() => setDeleting(null)}
          onDeleted={() => {
            setRows((rs) => rs?.filter((r) => r.name !== deleting) ?? rs);
            setDeleting(null);
          }}
        />
      )}
    </main>
  );
}

/** SetRow is one set, all from its list row (no read of the set). */
function SetRow({ row, onDelete }: { row: AppSetSummary; onDelete: () => void }) {
  const obj = `${row.project}/${row.name}`;
  const [canGet, canDelete] = useCan([
    { resource: 'applicationsets', action: 'get', object: obj },
    { resource: 'applicationsets', action: 'delete', object: obj },
  ]);
  const { busy, run, error } = useAction();
  const toast = useToast();
  const refresh = () =>
    run(async () => {
      await post(appSetPath(row.name, '/refresh'));
      toast(`${row.name} evaluated`);
    });
  const state = setState(row);
  return (
    <tr data-appset={row.name}>
      <td>
        <Link to={appSetURL(row.name)} className="app-name">
          {row.name}
        </Link>
      </td>
      <td>{row.project}</td>
      <td className="generators">
        <SetGenerators row={row} />
      </td>
      <td>
        <span title={`${row.apps} apps; the generators yielded ${row.generated} at the last pass that succeeded`}>
          {row.apps}
          {row.generated !== row.apps && <span className="muted"> (generated {row.generated})</span>}
        </span>
      </td>
      <td className="set-status">
        <Badge kind="phase" value={state} label="Set" />
        {row.error && <span className="set-error">{row.error}</span>}
        {error !== null && <ErrorMessage error={error} what="Not evaluated" />}
      </td>
      <td className="row-actions">
        <Button icon="refresh" variant="plain" allowed={canGet} denied="applicationsets, get" disabled={busy} onClick={refresh} aria-label={`Refresh ${row.name}`}>
          {busy ? 'Evaluating…' : 'Refresh'}
        </Button>
        <Button icon="trash" variant="plain" allowed={canDelete} denied="applicationsets, delete" hideDenied onClick={onDelete} aria-label={`Delete ${row.name}`}>
          Delete
        </Button>
      </td>
    </tr>
  );
}

/**
 * SetGenerators names a set's generators from its row; a row without
 * them (a set not evaluated since the field was added) shows the
 * repositories its Git generators read.
 */
export function SetGenerators({ row }: { row: Pick<AppSetSummary, 'generators' | 'repos'> }) {
  if (row.generators?.length) {
    return (
      <>
        {row.generators.map((g, i) => (
          <span key={i} className="flag label-chip" title={g}>
            {g}
          </span>
        ))}
      </>
    );
  }
  return (
    <>
      {row.repos?.map((r) => (
        <span key={r} className="flag label-chip" title={r}>
          git {repoName(r)}
        </span>
      ))}
    </>
  );
}

/** DeleteSetDialog deletes a set and, unless kept, its apps, after the name is typed. */
export function DeleteSetDialog({ name, onClose, onDeleted }: { name: string; onClose: () => void; onDeleted: () => void }) {
  const [keepApps, setKeepApps] = useState(false);
  const [confirm, setConfirm] = useState('');
  const { error, busy, run } = useAction();
  const toast = useToast();
  const submit = () =>
    run(async () => {
      const res = await del<AppSetDeleteResult>(appSetPath(name) + query({ cascade: keepApps ? 'false' : undefined }));
      toast(`ApplicationSet ${name} deleted${res?.deleted?.length ? ` with ${res.deleted.length} apps` : ''}`);
      onDeleted();
    });
  return (
    <Dialog title={`Delete ${name}`} open onClose={onClose}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          submit();
        }}
      >
        <div className="check">
          <input type="checkbox" id="keep-apps" checked={keepApps} onChange={(e) => setKeepApps(e.target.checked)} aria-describedby="keep-apps-hint" />
          <label htmlFor="keep-apps">Keep the set's apps</label>
          <small id="keep-apps-hint" className="hint">
            Otherwise each app is deleted as the set says (preserveResourcesOnDeletion keeps their resources).
          </small>
        </div>
        <Field id="delete-set-confirm" label={`Type ${name} to confirm`}>
          <input id="delete-set-confirm" value={confirm} onChange={(e) => setConfirm(e.target.value)} autoComplete="off" />
        </Field>
        <ErrorMessage error={error} what="Not deleted" />
        <DialogActions onCancel={onClose} label="Delete" busyLabel="Deleting…" variant="danger" icon="trash" busy={busy} disabled={confirm !== name} />
      </form>
    </Dialog>
  );
}
