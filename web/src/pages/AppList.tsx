import { useCallback, useEffect, useRef, useState } from 'react';
import { get, post, query } from '../api/client';
import { useEventStream } from '../api/sse';
import type { AppList as AppListT, AppSummary, ClusterView, Items, Project, Stale } from '../api/types';
import { Icon } from '../components/icons';
import { StaleNotice } from '../components/StaleNotice';
import { Badge, Button, CommitMessage, Dialog, ErrorMessage, Field, Spinner, DialogActions, Pager, THead, useAction, useToast } from '../components/ui';
import { keyValues, shortSHA, timeAgo } from '../lib/format';
import { StreamTracker } from '../lib/livelist';
import { appURL, Link, navigate, setParams } from '../router';
import { useCan } from '../session';

export const PAGE_SIZE = 50;
const syncValues = ['Synced', 'OutOfSync', 'Unknown'];
const healthValues = ['Healthy', 'Progressing', 'Degraded', 'Suspended', 'Missing', 'Unknown'];
const filterNames = ['project', 'sync', 'health', 'cluster', 'namespace', 'search', 'selector'] as const;
type Filters = Record<(typeof filterNames)[number], string>;

export const IN_CLUSTER = 'https://kubernetes.default.svc';

export function clusterLabel(server?: string): string {
  if (!server) return '';
  return server === IN_CLUSTER ? 'in-cluster' : server.replace(/^https?:\/\//, '');
}

const rowKey = (a: { project: string; name: string }) => `${a.project}/${a.name}`;

/** The first time the list's first page was on screen (for the benchmark). */
export const FIRST_PAGE_MARK = 'windlass:apps-first-page';

export function AppList({ params }: { params: URLSearchParams }) {
  const filters = Object.fromEntries(filterNames.map((f) => [f, params.get(f) ?? ''])) as Filters;
  const filterKey = filterNames.map((f) => filters[f]).join('\u0000');
  const [cursors, setCursors] = useState<string[]>(['']);
  const [rows, setRows] = useState<AppSummary[] | null>(null);
  // The query of the rows on screen: the stream follows the same page.
  const [shown, setShown] = useState('');
  const [next, setNext] = useState<string | undefined>();
  const [stale, setStale] = useState<Stale | undefined>();
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const [creating, setCreating] = useState(false);
  const page = cursors.length - 1;
  const [canCreate] = useCan([{ resource: 'applications', action: 'create', object: '*/*' }]);

  const load = useCallback(
    async (signal?: AbortSignal) => {
      setLoading(true);
      try {
        const q = query({ ...filters, limit: PAGE_SIZE, cursor: cursors[page] });
        const res = await get<AppListT>('/api/v1/applications' + q, { signal });
        setRows(res.items);
        setShown(q);
        setNext(res.next);
        setStale(res.stale);
        setError(null);
      } catch (e) {
        if (!signal?.aborted) setError(e);
      } finally {
        if (!signal?.aborted) setLoading(false);
      }
    },
    [filterKey, cursors],
  );

  useEffect(() => {
    setCursors(['']);
  }, [filterKey]);
  useEffect(() => {
    const ac = new AbortController();
    load(ac.signal);
    return () => ac.abort();
  }, [load]);
  const marked = useRef(false);
  useEffect(() => {
    if (rows && !marked.current) {
      marked.current = true;
      performance.mark(FIRST_PAGE_MARK);
    }
  }, [rows]);

  // Live updates: the stream sends this page's rows (same filters, limit
  // and cursor), which change in place; a row new to the page reloads it
  // (see StreamTracker).
  const rowsRef = useRef(rows);
  rowsRef.current = rows;
  const refetch = useRef<number | undefined>(undefined);
  const tracker = useRef(new StreamTracker());
  const onEvent = useCallback(
    (event: string, data: string) => {
      if (event === 'deleted') {
        const key = JSON.parse(data) as string;
        setRows((rs) => rs?.filter((r) => rowKey(r) !== key) ?? rs);
        return;
      }
      const app = JSON.parse(data) as AppSummary;
      const key = rowKey(app);
      switch (tracker.current.row(key, (rowsRef.current ?? []).map(rowKey))) {
        case 'update':
          setRows((rs) => rs?.map((r) => (rowKey(r) === key ? { ...r, ...app } : r)) ?? rs);
          break;
        case 'reload':
          window.clearTimeout(refetch.current);
          refetch.current = window.setTimeout(() => load(), 300);
          break;
        case 'ignore':
      }
    },
    [load],
  );
  const streamURL = rows ? '/api/v1/stream/applications' + shown : null;
  useEffect(() => tracker.current.reset(), [streamURL]);
  useEffect(() => () => window.clearTimeout(refetch.current), []);
  const live = useEventStream(streamURL, ['application', 'deleted'], onEvent);
  // A stream opens only after a fresh read: the rows are current again.
  useEffect(() => {
    if (live === 'live') setStale(undefined);
  }, [live]);

  // The last sync's time shows when the server sends it.
  const withLastSync = rows?.some((a) => a.lastSyncedAt) ?? false;
  return (
    <main id="main" className="page">
      <div className="page-head">
        <h1>Applications</h1>
        <span className={`live live-${live}`} role="status" title="Live updates over Server-Sent Events">
          <Icon name="live" size={10} /> {live === 'live' ? 'Live' : live === 'closed' ? 'Not live' : 'Connecting…'}
        </span>
        <div className="spacer" />
        <Button icon="plus" variant="primary" allowed={canCreate} denied="applications, create" onClick={() => setCreating(true)}>
          New application
        </Button>
      </div>
      <ListFilters filters={filters} />
      <StaleNotice stale={stale} />
      <ErrorMessage error={error} what="The applications could not be listed" />
      <div className="table-wrap">
        <table className="table apps" aria-busy={loading} aria-describedby="apps-caption">
          <caption id="apps-caption" className="sr-only">
            Applications, page {page + 1}, newest first
          </caption>
          <THead cols={['Name', 'Project', 'Sync', 'Health', 'Revision', 'Destination', ...(withLastSync ? ['Last sync'] : [])]} />
          <tbody>
            {rows?.map((a) => (
              <tr key={rowKey(a)} data-app={rowKey(a)}>
                <td>
                  <Link to={appURL(a.project, a.name)} className="app-name">
                    {a.name}
                  </Link>
                  <Labels labels={a.labels} />
                </td>
                <td>{a.project}</td>
                <td>
                  <Badge kind="sync" value={a.sync} />
                </td>
                <td>
                  <Badge kind="health" value={a.health} />
                </td>
                <td className="rev">
                  {a.revision ? <code title={a.revision}>{shortSHA(a.revision)}</code> : <span className="muted">—</span>}
                  <CommitMessage message={a.revisionMessage} />
                </td>
                <td>
                  {clusterLabel(a.cluster)}
                  {a.namespace && <span className="muted"> / {a.namespace}</span>}
                </td>
                {withLastSync && <td className="last-sync">{a.lastSyncedAt ? <LastSync at={a.lastSyncedAt} phase={a.lastSyncPhase} /> : <span className="muted">—</span>}</td>}
              </tr>
            ))}
          </tbody>
        </table>
        {rows && rows.length === 0 && !loading && (
          <p className="empty">{filterNames.some((f) => filters[f]) ? 'No application matches these filters.' : 'No applications yet.'}</p>
        )}
        {!rows && loading && <Spinner />}
      </div>
      <Pager page={page} hasNext={!!next} label="Pages" onPrev={() => setCursors((c) => c.slice(0, -1))} onNext={() => next && setCursors((c) => [...c, next])} />
      {creating && <CreateApp onClose={() => setCreating(false)} />}
    </main>
  );
}

/** LastSync shows when the latest sync ended and its result, so a failed one stands out. */
function LastSync({ at, phase }: { at: string; phase?: string }) {
  return (
    <>
      {phase && <Badge kind="phase" value={phase} label="Last sync" />} <time dateTime={at}>{timeAgo(at)}</time>
    </>
  );
}

function ListFilters({ filters }: { filters: Filters }) {
  const [projects, setProjects] = useState<string[]>([]);
  const [clusters, setClusters] = useState<ClusterView[]>([]);
  const [text, setText] = useState({ namespace: filters.namespace, search: filters.search, selector: filters.selector });
  useEffect(() => {
    get<Items<Project>>('/api/v1/projects').then((r) => setProjects(r.items.map((p) => p.name)), () => undefined);
    get<Items<ClusterView>>('/api/v1/clusters').then((r) => setClusters(r.items), () => undefined);
  }, []);
  // Text filters apply after typing pauses.
  useEffect(() => {
    if (text.namespace === filters.namespace && text.search === filters.search && text.selector === filters.selector) return undefined;
    const t = window.setTimeout(() => setParams(text), 300);
    return () => window.clearTimeout(t);
  }, [text.namespace, text.search, text.selector]);
  const select = (name: keyof Filters, label: string, values: { value: string; label: string }[]) => (
    <div className="field field-inline">
      <label htmlFor={`f-${name}`}>{label}</label>
      <select id={`f-${name}`} value={filters[name]} onChange={(e) => setParams({ [name]: e.target.value })}>
        <option value="">All</option>
        {values.map((v) => (
          <option key={v.value} value={v.value}>
            {v.label}
          </option>
        ))}
      </select>
    </div>
  );
  const asOptions = (xs: string[]) => xs.map((x) => ({ value: x, label: x }));
  return (
    <form className="filters" role="search" aria-label="Filter applications" onSubmit={(e) => e.preventDefault()}>
      <div className="field field-inline">
        <label htmlFor="f-search">Name</label>
        <input id="f-search" type="search" placeholder="Starts with…" value={text.search} onChange={(e) => setText({ ...text, search: e.target.value })} />
      </div>
      {select('project', 'Project', asOptions(projects))}
      {select('sync', 'Sync', asOptions(syncValues))}
      {select('health', 'Health', asOptions(healthValues))}
      {select('cluster', 'Cluster', clusters.map((c) => ({ value: c.server, label: `${c.name} (${clusterLabel(c.server)})` })))}
      <div className="field field-inline">
        <label htmlFor="f-namespace">Namespace</label>
        <input id="f-namespace" value={text.namespace} onChange={(e) => setText({ ...text, namespace: e.target.value })} />
      </div>
      <div className="field field-inline">
        <label htmlFor="f-selector">Labels</label>
        <input id="f-selector" placeholder="team=payments,tier in (web)" title="A Kubernetes label selector" value={text.selector} onChange={(e) => setText({ ...text, selector: e.target.value })} />
      </div>
      {filterNames.some((f) => filters[f]) && (
        <Button
          variant="plain"
          onClick={() => {
            setText({ namespace: '', search: '', selector: '' });
            setParams(Object.fromEntries(filterNames.map((f) => [f, undefined])));
          }}
        >
          Clear filters
        </Button>
      )}
    </form>
  );
}

const example = `{
  "name": "guestbook",
  "project": "default",
  "source": {"repoURL": "https://github.com/argoproj/argocd-example-apps.git", "path": "guestbook", "targetRevision": "HEAD"},
  "destination": {"namespace": "guestbook"},
  "syncPolicy": {"syncOptions": ["CreateNamespace=true"]}
}`;

/** CreateApp posts a spec: Windlass JSON or YAML, or an Argo CD Application. */
function CreateApp({ onClose }: { onClose: () => void }) {
  const [spec, setSpec] = useState(example);
  const { error, busy, run } = useAction();
  const toast = useToast();
  const submit = () =>
    run(async () => {
      const view = await post<{ spec: { name: string; project?: string } }>('/api/v1/applications', spec);
      toast(`Application ${view.spec.name} created`);
      navigate(appURL(view.spec.project ?? 'default', view.spec.name));
    });
  return (
    <Dialog title="New application" open onClose={onClose} wide>
      <Field id="new-app-spec" label="Spec (Windlass JSON or YAML, or an Argo CD Application)">
        <textarea id="new-app-spec" className="code" rows={14} value={spec} onChange={(e) => setSpec(e.target.value)} spellCheck={false} />
      </Field>
      <ErrorMessage error={error} what="Not created" />
      <DialogActions onCancel={onClose} label="Create" busyLabel="Creating…" onConfirm={submit} busy={busy} />
    </Dialog>
  );
}

/** Labels shows an app's labels (or annotations) as key=value chips, sorted. */
export function Labels({ labels }: { labels?: Record<string, string> }) {
  const pairs = keyValues(labels);
  if (pairs.length === 0) return null;
  return (
    <span className="labels">
      {pairs.map((p) => (
        <span key={p} className="flag label-chip" title={p}>
          {p}
        </span>
      ))}
    </span>
  );
}
