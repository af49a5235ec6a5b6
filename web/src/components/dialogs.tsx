import { useState, type ReactNode } from 'react';
import { appPath, del, post } from '../api/client';
import type { Application, DeleteResult, ResourceKey, ResourceStatus, SyncRequest } from '../api/types';
import { resourceLabel, shortSHA, syncNumber } from '../lib/format';
import { resourceId } from '../lib/tree';
import { Dialog, DialogActions, ErrorMessage, Field, useAction, useToast } from './ui';

function Check({ id, label, checked, onChange, hint }: { id: string; label: ReactNode; checked: boolean; onChange: (v: boolean) => void; hint?: string }) {
  return (
    <div className="check">
      <input id={id} type="checkbox" checked={checked} onChange={(e) => onChange(e.target.checked)} aria-describedby={hint ? `${id}-hint` : undefined} />
      <label htmlFor={id}>{label}</label>
      {hint && (
        <small id={`${id}-hint`} className="hint">
          {hint}
        </small>
      )}
    </div>
  );
}

function targetRevision(spec: Application): string {
  return spec.source?.targetRevision || spec.sources?.[0]?.targetRevision || 'HEAD';
}

/** SyncDialog starts a sync: prune, dry run, a revision, selected resources. */
export function SyncDialog({ project, spec, resources, onClose }: { project: string; spec: Application; resources: ResourceStatus[]; onClose: () => void }) {
  const [prune, setPrune] = useState(false);
  const [dryRun, setDryRun] = useState(false);
  const [applyOnly, setApplyOnly] = useState(false);
  const [revision, setRevision] = useState('');
  const [picked, setPicked] = useState(() => new Set(resources.map(resourceId)));
  const { error, busy, run } = useAction();
  const toast = useToast();
  const all = picked.size === resources.length;
  const submit = () =>
    run(async () => {
      const body: SyncRequest = { prune, dryRun, revision: revision.trim() || undefined, strategy: applyOnly ? 'apply' : undefined };
      if (!all) body.resources = resources.filter((r) => picked.has(resourceId(r))).map(({ group, kind, namespace, name }): ResourceKey => ({ group, kind, namespace, name }));
      const res = await post<{ id: string }>(appPath(project, spec.name, '/sync', { wait: 'false' }), body);
      toast(`Sync ${syncNumber(res.id)} started${dryRun ? ' (dry run)' : ''}`);
      onClose();
    });
  return (
    <Dialog title={`Sync ${spec.name}`} open onClose={onClose} wide>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          submit();
        }}
      >
        <Field id="sync-revision" label="Revision" hint={`A branch, tag or commit; empty for the target revision (${targetRevision(spec)}).`}>
          <input id="sync-revision" value={revision} onChange={(e) => setRevision(e.target.value)} placeholder={targetRevision(spec)} aria-describedby="sync-revision-hint" />
        </Field>
        <fieldset>
          <legend>Options</legend>
          <Check id="sync-prune" label="Prune" checked={prune} onChange={setPrune} hint="Delete resources that are no longer in Git." />
          <Check id="sync-dry-run" label="Dry run" checked={dryRun} onChange={setDryRun} hint="Validate with the API server without changing anything." />
          <Check id="sync-apply-only" label="Apply only" checked={applyOnly} onChange={setApplyOnly} hint="Skip the hooks (strategy apply)." />
        </fieldset>
        {resources.length > 0 && (
          <fieldset className="resource-picks">
            <legend>Resources ({all ? 'all' : `${picked.size} of ${resources.length}`})</legend>
            <Check
              id="sync-all"
              label="All resources"
              checked={all}
              onChange={(v) => setPicked(new Set(v ? resources.map(resourceId) : []))}
            />
            <div className="picks">
              {resources.map((r) => {
                const id = resourceId(r);
                return (
                  <Check
                    key={id}
                    id={`pick-${id}`}
                    label={
                      <>
                        {resourceLabel(r)} <span className="muted">({r.status})</span>
                      </>
                    }
                    checked={picked.has(id)}
                    onChange={(v) => {
                      const s = new Set(picked);
                      if (v) s.add(id);
                      else s.delete(id);
                      setPicked(s);
                    }}
                  />
                );
              })}
            </div>
          </fieldset>
        )}
        <ErrorMessage error={error} what="The sync did not start" />
        <DialogActions onCancel={onClose} label="Synchronize" busyLabel="Starting…" icon="sync" busy={busy} disabled={picked.size === 0} />
      </form>
    </Dialog>
  );
}

/** RollbackDialog re-syncs a past sync's revision. */
export function RollbackDialog({
  project,
  spec,
  target,
  onClose,
}: {
  project: string;
  spec: Application;
  target: { id: string; revision?: string; sha?: string };
  onClose: () => void;
}) {
  const automated = !!spec.syncPolicy?.automated;
  const [prune, setPrune] = useState(false);
  const [dryRun, setDryRun] = useState(false);
  const [force, setForce] = useState(false);
  const { error, busy, run } = useAction();
  const toast = useToast();
  const submit = () =>
    run(async () => {
      const res = await post<{ id: string }>(appPath(project, spec.name, '/rollback', { wait: 'false' }), { id: target.id, prune, dryRun, force });
      toast(`Rollback to ${syncNumber(target.id)} started as sync ${syncNumber(res.id)}`);
      onClose();
    });
  return (
    <Dialog title={`Roll ${spec.name} back`} open onClose={onClose}>
      <p>
        Sync again exactly what sync <strong>{syncNumber(target.id)}</strong> synced
        {target.sha || target.revision ? (
          <>
            {' '}
            (revision <code>{shortSHA(target.sha || target.revision)}</code>)
          </>
        ) : null}
        .
      </p>
      {automated && (
        <p className="notice" role="note">
          Automated sync is on: it would sync the target revision again. Windlass refuses a rollback then, unless forced; a forced rollback holds automated sync back while the target stays the same.
        </p>
      )}
      <fieldset>
        <legend>Options</legend>
        <Check id="rb-prune" label="Prune" checked={prune} onChange={setPrune} />
        <Check id="rb-dry-run" label="Dry run" checked={dryRun} onChange={setDryRun} />
        {automated && <Check id="rb-force" label="Force (automated sync is on)" checked={force} onChange={setForce} />}
      </fieldset>
      <ErrorMessage error={error} what="The rollback did not start" />
      <DialogActions onCancel={onClose} label="Roll back" busyLabel="Starting…" icon="undo" onConfirm={submit} busy={busy} disabled={automated && !force} />
    </Dialog>
  );
}

const cascades = [
  { value: 'foreground', label: 'Foreground', hint: 'Delete the resources and wait until they are gone, then delete the app.' },
  { value: 'background', label: 'Background', hint: 'Delete the app at once; Kubernetes deletes the resources in the background.' },
  { value: 'orphan', label: 'Orphan', hint: 'Delete only the app; leave its resources running in the cluster.' },
];

/** DeleteDialog deletes the app with a cascade policy, after the name is typed. */
export function DeleteDialog({ project, name, onClose, onDeleted }: { project: string; name: string; onClose: () => void; onDeleted: () => void }) {
  const [cascade, setCascade] = useState('foreground');
  const [confirm, setConfirm] = useState('');
  const [waiting, setWaiting] = useState<ResourceKey[] | null>(null);
  const { error, busy, run } = useAction();
  const toast = useToast();
  const submit = () =>
    run(async () => {
      const res = await del<DeleteResult>(appPath(project, name, '', { cascade }));
      if (res?.awaitingApproval?.length) {
        setWaiting(res.awaitingApproval);
        return;
      }
      toast(`Application ${name} deleted`);
      onDeleted();
    });
  const approve = () =>
    run(async () => {
      await post(appPath(project, name, '/confirm-deletion'));
      toast(`Deletion of ${name} confirmed`);
      onDeleted();
    });
  return (
    <Dialog title={`Delete ${name}`} open onClose={onClose}>
      {waiting ? (
        <>
          <p>These resources are marked Delete=confirm and wait for approval:</p>
          <ul>
            {waiting.map((r) => (
              <li key={resourceId(r)}>{resourceLabel(r)}</li>
            ))}
          </ul>
          <ErrorMessage error={error} />
          <DialogActions onCancel={onClose} cancelLabel="Later" label="Confirm deletion" variant="danger" onConfirm={approve} busy={busy} />
        </>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            submit();
          }}
        >
          <fieldset>
            <legend>Cascade</legend>
            {cascades.map((c) => (
              <div className="check" key={c.value}>
                <input type="radio" id={`cascade-${c.value}`} name="cascade" value={c.value} checked={cascade === c.value} onChange={() => setCascade(c.value)} aria-describedby={`cascade-${c.value}-hint`} />
                <label htmlFor={`cascade-${c.value}`}>{c.label}</label>
                <small id={`cascade-${c.value}-hint`} className="hint">
                  {c.hint}
                </small>
              </div>
            ))}
          </fieldset>
          <Field id="delete-confirm" label={`Type ${name} to confirm`}>
            <input id="delete-confirm" value={confirm} onChange={(e) => setConfirm(e.target.value)} autoComplete="off" />
          </Field>
          <ErrorMessage error={error} what="Not deleted" />
          <DialogActions onCancel={onClose} label="Delete" busyLabel="Deleting…" variant="danger" icon="trash" busy={busy} disabled={confirm !== name} />
        </form>
      )}
    </Dialog>
  );
}

/** TerminateDialog cancels the running sync. */
export function TerminateDialog({ project, name, syncID, onClose }: { project: string; name: string; syncID: string; onClose: () => void }) {
  const { error, busy, run } = useAction();
  const toast = useToast();
  const submit = () =>
    run(async () => {
      await post(appPath(project, name, '/terminate'));
      toast(`Sync ${syncNumber(syncID)} terminated`);
      onClose();
    });
  return (
    <Dialog title="Terminate the sync" open onClose={onClose}>
      <p>
        Cancel sync <strong>{syncNumber(syncID)}</strong> of {name}? Its hooks are deleted and the sync is recorded as Terminated.
      </p>
      <ErrorMessage error={error} what="Not terminated" />
      <DialogActions onCancel={onClose} label="Terminate" variant="danger" icon="stop" onConfirm={submit} busy={busy} />
    </Dialog>
  );
}
