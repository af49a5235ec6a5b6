import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError, get, post } from '../api/client';
import { useEventStream } from '../api/sse';
import type { AppSetChild, AppSetDetail as Detail, AppSetPreview, AppSetStatus } from '../api/types';
import { Icon } from '../components/icons';
import { RolloutPanel } from '../components/RolloutPanel';
import { Badge, Button, ErrorMessage, Spinner, THead, useAction, useToast } from '../components/ui';
import { dateTime, timeAgo } from '../lib/format';
import { appSetPath, setState, splitRef } from '../lib/appsets';
import { appURL, Link, navigate } from '../router';
import { useCan } from '../session';
import { clusterLabel } from './AppList';
import { DeleteSetDialog } from './AppSetList';

/**
 * AppSetDetail is a set's page: its state and conditions, its apps, the
 * generators' output and its rollout step by step, live over the set's
 * event stream.
 */
export function AppSetDetail({ name }: { name: string }) {
  const [detail, setDetail] = useState<Detail | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [deleting, setDeleting] = useState(false);
  const [gone, setGone] = useState(false);
  const load = useCallback(() => get<Detail>(appSetPath(name)).then((d) => (setDetail(d), setError(null)), setError), [name]);
  useEffect(() => {
    load();
  }, [load]);
  // The stream sends the set and its status; the apps' sync and health
  // come with the detail, read again after each change.
  const again = useRef<number | undefined>(undefined);
  const onEvent = useCallback(
    (event: string, data: string) => {
      if (event === 'deleted') {
        setGone(true);
        return;
      }
      const view = JSON.parse(data) as { status: AppSetStatus };
      setDetail((d) => (d ? { ...d, status: view.status } : d));
      window.clearTimeout(again.current);
      again.current = window.setTimeout(load, 300);
    },
    [load],
  );
  useEffect(() => () => window.clearTimeout(again.current), []);
  const live = useEventStream(detail && !gone ? appSetPath(name).replace('/applicationsets/', '/stream/applicationsets/') : null, ['applicationset', 'deleted'], onEvent);
  const obj = `${detail?.set.spec.template.spec?.project || 'default'}/${name}`;
  const [canGet, canUpdate, canDelete, canCreate] = useCan([
    { resource: 'applicationsets', action: 'get', object: obj },
    { resource: 'applicationsets', action: 'update', object: obj },
    { resource: 'applicationsets', action: 'delete', object: obj },
    { resource: 'applicationsets', action: 'create', object: obj },
  ]);
  const { busy, run, error: refreshError } = useAction();
  const toast = useToast();

  if (error && !detail) {
    const missing = error instanceof ApiError && error.status === 404;
    return (
      <main id="main" className="page">
        <h1>{name}</h1>
        <ErrorMessage error={error} what={missing ? 'No such ApplicationSet' : 'The set could not be loaded'} />
        <p>
          <Link to="/applicationsets">Back to the sets</Link>
        </p>
      </main>
    );
  }
  if (!detail) {
    return (
      <main id="main" className="page">
        <Spinner label={`Loading ${name}…`} />
      </main>
    );
  }
  const { set, status } = detail;
  const state = setState(status);
  const refresh = () =>
    run(async () => {
      setDetail(await post<Detail>(appSetPath(name, '/refresh')));
      toast(`${name} evaluated`);
    });
  const policy = set.spec.syncPolicy;
  return (
    <main id="main" className="page">
      <div className="crumbs">
        <Link to="/applicationsets">ApplicationSets</Link> /
      </div>
      <div className="page-head">
        <h1>{name}</h1>
        <Badge kind="phase" value={gone ? 'Deleting' : state} label="Set" />
        <span className={`live live-${live}`} role="status" title="Live updates over Server-Sent Events">
          <Icon name="live" size={10} /> {live === 'live' ? 'Live' : gone ? 'Deleted' : live === 'closed' ? 'Not live' : 'Connecting…'}
        </span>
        <div className="spacer" />
        <Button icon="refresh" allowed={canGet} denied="applicationsets, get" disabled={busy || gone} onClick={refresh}>
          {busy ? 'Evaluating…' : 'Refresh'}
        </Button>
        <Button icon="trash" variant="danger" allowed={canDelete} denied="applicationsets, delete" hideDenied disabled={gone} onClick={() => setDeleting(true)}>
          Delete
        </Button>
      </div>
      <ErrorMessage error={refreshError} what="Not evaluated" />
      {gone && <p className="notice">This set was deleted.</p>}

      <dl className="summary set-facts">
        <div>
          <dt>Project</dt>
          <dd>{set.spec.template.spec?.project || 'default'}</dd>
        </div>
        <div>
          <dt>Generators</dt>
          <dd>
            {(detail.generators ?? []).map((g, i) => (
              <span key={i} className="flag label-chip" title={`spec.generators[${i}]`}>
                {g}
              </span>
            ))}
          </dd>
        </div>
        <div>
          <dt>Policy</dt>
          <dd>
            {policy?.applicationsSync ?? 'sync'}
            {policy?.preserveResourcesOnDeletion && ', preserves resources on deletion'}
            {set.spec.strategy?.type && `, ${set.spec.strategy.type}`}
          </dd>
        </div>
        <div>
          <dt>Last pass</dt>
          <dd>
            {status.lastEvaluatedAt ? (
              <time dateTime={status.lastEvaluatedAt} title={dateTime(status.lastEvaluatedAt)}>
                {timeAgo(status.lastEvaluatedAt)}
              </time>
            ) : (
              'none yet'
            )}
            {status.lastReason && <span className="muted"> ({status.lastReason})</span>}
            <span className="muted"> · {status.passes} passes</span>
          </dd>
        </div>
      </dl>

      <Conditions status={status} />
      <RolloutPanel set={set} canUpdate={canUpdate} version={`${status.passes}|${status.apps.length}`} />
      <SetApps apps={detail.applications} listed={status.apps} />
      <GeneratorOutput set={detail.set} canPreview={canCreate} version={status.passes} />
      {deleting && <DeleteSetDialog name={name} onClose={() => setDeleting(false)} onDeleted={() => navigate('/applicationsets')} />}
    </main>
  );
}

/** Conditions shows why the last pass wrote nothing, and what the last change did. */
function Conditions({ status }: { status: AppSetStatus }) {
  const ch = status.lastChange;
  const parts = ch
    ? ([
        ['created', ch.created],
        ['updated', ch.updated],
        ['deleted', ch.deleted],
        ['kept', ch.kept],
      ] as const).filter(([, xs]) => xs?.length)
    : [];
  return (
    <section className="set-conditions" aria-labelledby="conditions-title">
      <h2 id="conditions-title">Conditions</h2>
      {status.error ? (
        <div className="error" role="alert">
          <Icon name="alert" />
          <div>
            <strong>{status.errorKind ?? 'Error'}: </strong>
            <span className="error-text">{status.error}</span>
            <p className="hint">The last pass wrote nothing; the apps stay as they were.</p>
          </div>
        </div>
      ) : (
        <p className="muted">{status.passes ? 'The last pass succeeded.' : 'The set has not been evaluated yet.'}</p>
      )}
      {status.deleting && <p className="notice">The set is being deleted.</p>}
      {parts.length > 0 && (
        <p className="muted">
          The last change {parts.map(([what, xs]) => `${what} ${xs!.length}`).join(', ')}: {parts.flatMap(([, xs]) => xs!).join(', ')}.
        </p>
      )}
    </section>
  );
}

/** SetApps lists the set's apps with their sync and health, linked to their pages. */
export function SetApps({ apps, listed }: { apps: AppSetChild[]; listed: string[] }) {
  const running = new Set(apps.map((a) => `${a.project}/${a.name}`));
  const others = listed.filter((r) => !running.has(r));
  return (
    <section aria-labelledby="set-apps-title">
      <h2 id="set-apps-title">Applications ({listed.length})</h2>
      <div className="table-wrap">
        <table className="table set-apps">
          <THead cols={['Name', 'Project', 'Sync', 'Health']} />
          <tbody>
            {apps.map((a) => (
              <tr key={`${a.project}/${a.name}`} data-app={`${a.project}/${a.name}`}>
                <td>
                  <Link to={appURL(a.project, a.name)} className="app-name">
                    {a.name}
                  </Link>
                </td>
                <td>{a.project}</td>
                <td>
                  <Badge kind="sync" value={a.sync} />
                </td>
                <td>
                  <Badge kind="health" value={a.health} />
                </td>
              </tr>
            ))}
            {others.map((r) => {
              const { project, name } = splitRef(r);
              return (
                <tr key={r} data-app={r}>
                  <td>{name}</td>
                  <td>{project}</td>
                  <td colSpan={2} className="muted">
                    not running, or not yours to see
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
        {listed.length === 0 && apps.length === 0 && <p className="empty">The set has no apps.</p>}
      </div>
    </section>
  );
}

/** GeneratorOutput previews the apps the generators yield now (nothing is written). */
function GeneratorOutput({ set, canPreview, version }: { set: Detail['set']; canPreview: boolean | undefined; version: number }) {
  const [preview, setPreview] = useState<AppSetPreview | null>(null);
  const { busy, run, error } = useAction();
  const show = () =>
    run(async () => {
      setPreview(await post<AppSetPreview>('/api/v1/applicationsets/generate', { apiVersion: 'argoproj.io/v1alpha1', kind: 'ApplicationSet', ...set }));
    });
  useEffect(() => {
    if (canPreview) show();
  }, [canPreview, version]);
  return (
    <section aria-labelledby="gen-output-title">
      <div className="section-head">
        <h2 id="gen-output-title">Generators' output</h2>
        <Button icon="refresh" variant="plain" allowed={canPreview} denied="applicationsets, create (the preview evaluates the set)" disabled={busy} onClick={show}>
          {busy ? 'Evaluating…' : 'Preview again'}
        </Button>
      </div>
      <ErrorMessage error={error} what="The generators could not be evaluated" />
      {canPreview === false && <p className="muted">Previewing needs applicationsets, create on this set.</p>}
      {preview && (
        <div className="table-wrap">
          <table className="table set-preview">
            <THead cols={['Application', 'Project', 'Source', 'Destination', 'From']} />
            <tbody>
              {preview.applications.map((p) => {
                const a = p.application;
                const src = a.source ?? a.sources?.[0];
                return (
                  <tr key={`${a.project}/${a.name}`}>
                    <td>{a.name}</td>
                    <td>{a.project ?? 'default'}</td>
                    <td>
                      {src ? (
                        <code title={src.repoURL}>
                          {src.path ?? src.chart ?? '.'}
                          {src.targetRevision ? `@${src.targetRevision}` : ''}
                        </code>
                      ) : (
                        <span className="muted">—</span>
                      )}
                    </td>
                    <td>
                      {clusterLabel(a.destination?.server)}
                      {a.destination?.namespace && <span className="muted"> / {a.destination.namespace}</span>}
                    </td>
                    <td className="muted">
                      {p.generator} #{p.element}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          {preview.applications.length === 0 && <p className="empty">The generators yield no app.</p>}
        </div>
      )}
    </section>
  );
}
