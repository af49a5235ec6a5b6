import { useCallback, useEffect, useMemo, useState } from 'react';
import { ApiError, appPath, get, post } from '../api/client';
import { useEventStream } from '../api/sse';
import type { AppEvent, AppView, EventsResponse, Tree } from '../api/types';
import { ConditionsNotice } from '../components/ConditionsNotice';
import { DependencyGraph } from '../components/DependencyGraph';
import { DeleteDialog, RollbackDialog, SyncDialog, TerminateDialog } from '../components/dialogs';
import { HealthTimeline } from '../components/HealthTimeline';
import { HistoryTab } from '../components/HistoryTab';
import { NotificationsTab } from '../components/NotificationsTab';
import { Icon } from '../components/icons';
import { OperationPanel } from '../components/OperationPanel';
import { ParamsTab } from '../components/ParamsTab';
import { SpecTab } from '../components/SpecTab';
import { StaleNotice } from '../components/StaleNotice';
import { cachedGet, EventTable, ResourcePanel } from '../components/ResourcePanel';
import { ResourceList, ResourceTree } from '../components/ResourceTree';
import { Badge, Button, CommitMessage, ErrorMessage, Spinner, TabPanel, Tabs, useToast } from '../components/ui';
import { dateTime, shortSHA, timeAgo } from '../lib/format';
import { mergeTree } from '../lib/tree';
import { Link, navigate, setParams } from '../router';
import { appObject, useCan } from '../session';
import { clusterLabel, Labels } from './AppList';

const tabs = [
  { id: 'tree', label: 'Tree', icon: 'tree' as const },
  { id: 'list', label: 'List', icon: 'list' as const },
  { id: 'history', label: 'History', icon: 'history' as const },
  { id: 'health', label: 'Health', icon: 'heart' as const },
  { id: 'events', label: 'Events', icon: 'alert' as const },
  { id: 'notifications', label: 'Notifications', icon: 'external' as const },
  { id: 'params', label: 'Parameters', icon: 'settings' as const },
  { id: 'spec', label: 'Spec', icon: 'edit' as const },
];

type DialogState =
  | { kind: 'sync' }
  | { kind: 'delete' }
  | { kind: 'terminate' }
  | { kind: 'rollback'; target: { id: string; revision?: string; sha?: string } }
  | null;

export function AppDetail({ project, name, params }: { project: string; name: string; params: URLSearchParams }) {
  const [view, setView] = useState<AppView | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [tree, setTree] = useState<Tree | null>(null);
  const [treeError, setTreeError] = useState<unknown>(null);
  const [dialog, setDialog] = useState<DialogState>(null);
  const [deleted, setDeleted] = useState(false);
  const toast = useToast();
  const tab = params.get('tab') ?? 'tree';
  const selected = params.get('resource') ?? undefined;
  const obj = appObject(project, name);
  const [canSync, canRollback, canDelete, canUpdate] = useCan([
    { resource: 'applications', action: 'sync', object: obj },
    { resource: 'applications', action: 'rollback', object: obj },
    { resource: 'applications', action: 'delete', object: obj },
    { resource: 'applications', action: 'update', object: obj },
  ]);

  useEffect(() => {
    setView(null);
    setError(null);
    get<AppView>(appPath(project, name)).then(setView, setError);
  }, [project, name]);

  const onEvent = useCallback((event: string, data: string) => {
    if (event === 'deleted') setDeleted(true);
    // The stream's views carry no dependents: keep the last GET's.
    else setView((v) => ({ ...(JSON.parse(data) as AppView), dependents: v?.dependents }));
  }, []);
  const live = useEventStream(view && !deleted ? appPath(project, name).replace('/api/v1/applications/', '/api/v1/stream/applications/') : null, ['application', 'deleted'], onEvent);
  // Neither dependents nor the other apps of the graph come with the
  // stream: read them again every 10 s while the page is visible.
  const [depTick, setDepTick] = useState(0);
  const hasView = !!view;
  useEffect(() => {
    if (!hasView || deleted) return undefined;
    const t = window.setInterval(() => {
      if (document.visibilityState !== 'visible') return;
      get<AppView>(appPath(project, name)).then(
        (v) => {
          setView((cur) => (cur ? { ...cur, dependents: v.dependents } : cur));
          setDepTick((n) => n + 1);
        },
        () => undefined,
      );
    }, 10_000);
    return () => window.clearInterval(t);
  }, [project, name, hasView, deleted]);

  const status = view?.status;
  const op = status?.operation;
  // The tree is read again when the compared state or the operation moves.
  const version = `${status?.reconciledAt ?? ''}|${status?.sha ?? ''}|${status?.sync ?? ''}|${status?.health ?? ''}|${op?.phase ?? ''}|${op?.stepIndex ?? ''}`;
  // Children (ReplicaSets, Pods) come and go without the app's status
  // changing: the tree is read again every 10 s while it is shown.
  const [tick, setTick] = useState(0);
  const showsTree = tab === 'tree' || tab === 'list';
  useEffect(() => {
    if (!showsTree) return undefined;
    const t = window.setInterval(() => document.visibilityState === 'visible' && setTick((n) => n + 1), 10_000);
    return () => window.clearInterval(t);
  }, [showsTree]);
  useEffect(() => {
    if (!view) return undefined;
    let alive = true;
    const t = window.setTimeout(() => {
      cachedGet<Tree>(appPath(project, name, '/tree'), `${version}#${tick}`).then(
        (tr) => {
          if (!alive) return;
          setTree(tr);
          setTreeError(null);
        },
        (e) => alive && setTreeError(e),
      );
    }, 150);
    return () => {
      alive = false;
      window.clearTimeout(t);
    };
  }, [project, name, version, tick, !!view]);

  const items = useMemo(() => mergeTree(status?.resources ?? [], tree?.nodes ?? null), [status?.resources, tree]);
  const item = items.find((i) => i.id === selected);

  if (error) {
    const forbidden = error instanceof ApiError && error.status === 403;
    const missing = error instanceof ApiError && error.status === 404;
    return (
      <main id="main" className="page">
        <h1>{name}</h1>
        <ErrorMessage error={error} what={forbidden ? 'You may not see this application' : missing ? 'No such application' : 'The application could not be loaded'} />
        <p>
          <Link to="/applications">Back to the applications</Link>
        </p>
      </main>
    );
  }
  if (!view || !status) {
    return (
      <main id="main" className="page">
        <Spinner label={`Loading ${name}…`} />
      </main>
    );
  }
  const spec = view.spec;
  const sources = spec.sources?.length ? spec.sources : spec.source ? [spec.source] : [];
  const automated = spec.syncPolicy?.automated;
  const running = !!op?.syncID && (op.phase === 'Running' || op.phase === 'Pending');
  const refresh = async (hard: boolean) => {
    try {
      await post(appPath(project, name, '/refresh', { hard: hard ? 'true' : undefined }));
      toast(hard ? 'Hard refresh requested' : 'Refresh requested');
    } catch (e) {
      toast(String(e instanceof Error ? e.message : e), true);
    }
  };
  const readOnly = canSync === false && canRollback === false && canDelete === false;

  return (
    <main id="main" className={item ? 'page page-with-panel' : 'page'}>
      <nav className="crumbs" aria-label="Breadcrumb">
        <Link to="/applications">Applications</Link> <span aria-hidden="true">/</span> <span aria-current="page">{name}</span>
      </nav>
      {deleted && <ErrorMessage error={new ApiError(404, { title: 'Deleted', detail: `the application ${name} was deleted` })} />}
      <header className="app-head">
        <div className="app-title">
          <h1>{name}</h1>
          <span className="muted">project {project}</span>
          <Badge kind="sync" value={status.sync} />
          <Badge kind="health" value={status.health} />
          <span className={`live live-${live}`} role="status" title="Live updates over Server-Sent Events">
            <Icon name="live" size={10} /> {live === 'live' ? 'Live' : live === 'closed' ? 'Not live' : 'Connecting…'}
          </span>
        </div>
        <div className="actions" role="toolbar" aria-label="Application actions">
          <Button icon="sync" variant="primary" allowed={canSync} denied="applications, sync" hideDenied onClick={() => setDialog({ kind: 'sync' })} disabled={running || deleted}>
            Sync
          </Button>
          <Button icon="refresh" onClick={() => refresh(false)} disabled={deleted}>
            Refresh
          </Button>
          <Button icon="refresh" onClick={() => refresh(true)} disabled={deleted} title="Refresh, bypassing the Git cache">
            Hard refresh
          </Button>
          <Button icon="undo" allowed={canRollback} denied="applications, rollback" hideDenied onClick={() => setParams({ tab: 'history' })} disabled={deleted}>
            Rollback
          </Button>
          {running && (
            <Button icon="stop" allowed={canSync} denied="applications, sync" hideDenied onClick={() => setDialog({ kind: 'terminate' })}>
              Terminate
            </Button>
          )}
          <Button icon="trash" variant="danger" allowed={canDelete} denied="applications, delete" hideDenied onClick={() => setDialog({ kind: 'delete' })} disabled={deleted}>
            Delete
          </Button>
        </div>
        {readOnly && (
          <p className="muted read-only" role="note">
            Read-only: your role may not sync, roll back or delete this application.
          </p>
        )}
        <dl className="summary">
          <div>
            <dt>Revision</dt>
            <dd>
              {status.sha ? <code title={status.sha}>{shortSHA(status.sha)}</code> : <span className="muted">—</span>}
              {status.revision && status.revision !== status.sha && <span className="muted"> ({status.revision})</span>}
              <CommitMessage {...status.revisionMetadata} />
            </dd>
          </div>
          {sources.map((s, i) => (
            <div key={i}>
              <dt>{sources.length > 1 ? `Source ${i + 1}` : 'Repository'}</dt>
              <dd className="wrap">
                {s.repoURL}
                {s.chart ? ` chart ${s.chart}` : ''} <span className="muted">{s.path ? `path ${s.path}` : ''} @ {s.targetRevision || 'HEAD'}</span>
              </dd>
            </div>
          ))}
          <div>
            <dt>Destination</dt>
            <dd>
              {clusterLabel(spec.destination?.server || 'https://kubernetes.default.svc')} / {spec.destination?.namespace || <span className="muted">default</span>}
            </dd>
          </div>
          <div>
            <dt>Automation</dt>
            <dd>
              <span className={`flag ${automated ? 'flag-on' : 'flag-off'}`}>Auto-sync {automated ? 'on' : 'off'}</span>
              {automated && (
                <>
                  <span className={`flag ${automated.prune ? 'flag-on' : 'flag-off'}`}>Prune {automated.prune ? 'on' : 'off'}</span>
                  <span className={`flag ${automated.selfHeal ? 'flag-on' : 'flag-off'}`}>Self-heal {automated.selfHeal ? 'on' : 'off'}</span>
                </>
              )}
              {spec.syncPolicy?.syncOptions?.map((o) => (
                <span key={o} className="flag">
                  {o}
                </span>
              ))}
            </dd>
          </div>
          {[
            { title: 'Labels', kv: spec.labels },
            { title: 'Annotations', kv: spec.annotations },
          ].map(
            ({ title, kv }) =>
              kv &&
              Object.keys(kv).length > 0 && (
                <div key={title}>
                  <dt>{title}</dt>
                  <dd className="wrap">
                    <Labels labels={kv} />
                  </dd>
                </div>
              ),
          )}
          {spec.info?.map((i) => (
            <div key={i.name}>
              <dt>{i.name}</dt>
              <dd className="wrap">{/^https?:\/\//.test(i.value) ? <a href={i.value} rel="noreferrer noopener" target="_blank">{i.value}</a> : i.value}</dd>
            </div>
          ))}
          <div>
            <dt>Compared</dt>
            <dd>
              {status.reconciledAt ? (
                <time dateTime={status.reconciledAt} title={dateTime(status.reconciledAt)}>
                  {timeAgo(status.reconciledAt)}
                </time>
              ) : (
                <span className="muted">not yet</span>
              )}
            </dd>
          </div>
        </dl>
        {status.reconcileSkipped && (
          <p className="notice" role="status">
            Reconciliation is paused by the <code>argocd.argoproj.io/skip-reconcile</code> annotation: the status is as the last pass left it, and syncs are refused. Remove the annotation to resume.
          </p>
        )}
        {status.message && <ErrorMessage error={new ApiError(-1, { title: `Status ${status.sync}`, detail: status.message })} />}
        <StaleNotice stale={view.stale} />
        <ConditionsNotice conditions={status.conditions} />
        {status.orphanedResources?.warning && (
          <p className="notice" role="status">
            {status.orphanedResources.warning}:{' '}
            {status.orphanedResources.resources?.map((r) => `${r.kind}/${r.namespace}/${r.name}`).join(', ')}
            {status.orphanedResources.count > (status.orphanedResources.resources?.length ?? 0) && ', …'}
          </p>
        )}
      </header>

      <OperationPanel project={project} app={name} op={op} last={view.history?.[0]} canDelete={canDelete} />
      <DependencyGraph project={project} view={view} version={`${version}#${depTick}`} />

      <Tabs tabs={tabs} active={tab} onChange={(t) => setParams({ tab: t === 'tree' ? undefined : t })} label="Application views" />
      {tab === 'tree' && (
        <TabPanel id="tree">
          <TreeNote error={treeError} truncated={tree?.truncated} />
          <ResourceTree appName={name} sync={status.sync} health={status.health} items={items} selected={selected} onSelect={(id) => setParams({ resource: id })} />
        </TabPanel>
      )}
      {tab === 'list' && (
        <TabPanel id="list">
          <TreeNote error={treeError} truncated={tree?.truncated} />
          <ResourceList items={items} selected={selected} onSelect={(id) => setParams({ resource: id })} />
        </TabPanel>
      )}
      {tab === 'history' && (
        <TabPanel id="history">
          <HistoryTab project={project} app={name} recent={view.history ?? []} canRollback={canRollback} onRollback={(target) => setDialog({ kind: 'rollback', target })} version={view.history?.[0]?.id ?? ''} />
        </TabPanel>
      )}
      {tab === 'health' && (
        <TabPanel id="health">
          <HealthTimeline project={project} app={name} version={status.reconciledAt ?? ''} />
        </TabPanel>
      )}
      {tab === 'notifications' && (
        <TabPanel id="notifications">
          <NotificationsTab project={project} app={name} version={version} />
        </TabPanel>
      )}
      {tab === 'events' && (
        <TabPanel id="events">
          <AppEvents project={project} app={name} own={status.events ?? []} version={version} />
        </TabPanel>
      )}

      {tab === 'params' && (
        <TabPanel id="params">
          <ParamsTab key={JSON.stringify(spec.sources ?? spec.source)} project={project} spec={spec} canUpdate={canUpdate} onSaved={setView} />
        </TabPanel>
      )}
      {tab === 'spec' && (
        <TabPanel id="spec">
          <SpecTab project={project} spec={spec} canUpdate={canUpdate} onSaved={setView} />
        </TabPanel>
      )}

      {item && <ResourcePanel project={project} app={name} item={item} version={version} onClose={() => setParams({ resource: undefined })} />}

      {dialog?.kind === 'sync' && <SyncDialog project={project} spec={spec} resources={status.resources ?? []} onClose={() => setDialog(null)} />}
      {dialog?.kind === 'rollback' && <RollbackDialog project={project} spec={spec} target={dialog.target} onClose={() => setDialog(null)} />}
      {dialog?.kind === 'terminate' && op && <TerminateDialog project={project} name={name} syncID={op.syncID} onClose={() => setDialog(null)} />}
      {dialog?.kind === 'delete' && <DeleteDialog project={project} name={name} onClose={() => setDialog(null)} onDeleted={() => navigate('/applications')} />}
    </main>
  );
}

function TreeNote({ error, truncated }: { error: unknown; truncated?: boolean }) {
  if (truncated) return <p className="notice">The tree is cut short: the application has more resources than the server lists at once.</p>;
  if (!error) return null;
  if (error instanceof ApiError && error.notAvailable) {
    return <p className="notice">This server does not list the children of resources (ReplicaSets, Pods): only the managed resources are shown.</p>;
  }
  return <ErrorMessage error={error} what="The live resource tree could not be read; showing the managed resources" />;
}

function AppEvents({ project, app, own, version }: { project: string; app: string; own: AppEvent[]; version: string }) {
  const [kube, setKube] = useState<AppEvent[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    cachedGet<EventsResponse>(appPath(project, app, '/events'), version).then(
      (r) => {
        setKube(r.events);
        setError(null);
      },
      setError,
    );
  }, [project, app, version]);
  const ownEvents = own.map((e) => ({ ...e, source: e.source ?? 'windlass' }));
  // The events endpoint includes Windlass's own events when it exists.
  const all = (kube ?? ownEvents).slice().sort((a, b) => (a.time < b.time ? 1 : -1));
  return (
    <>
      {error instanceof ApiError && error.notAvailable ? (
        <p className="notice">This server does not list Kubernetes events yet: only Windlass's own events are shown.</p>
      ) : (
        <ErrorMessage error={error} what="The Kubernetes events could not be loaded" />
      )}
      <EventTable events={all} />
    </>
  );
}
