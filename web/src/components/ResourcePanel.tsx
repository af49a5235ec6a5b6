import { useEffect, useMemo, useRef, useState } from 'react';
import { ApiError, appPath, get } from '../api/client';
import type { AppEvent, DiffResponse, EventsResponse, KubeObject, ManifestsResponse } from '../api/types';
import { diffTexts, parseUnified } from '../lib/diff';
import { dateTime, resourceLabel } from '../lib/format';
import type { ResourceItem } from '../lib/tree';
import { toYAML } from '../lib/yaml';
import { DiffView } from './DiffView';
import { Icon } from './icons';
import { hasLogs, LogViewer } from './LogViewer';
import { ResourceActions, resourceParams } from './ResourceActions';
import { Badge, ErrorMessage, Spinner, TabPanel, Tabs, THead } from './ui';

// Responses of the per-app read endpoints, shared by the panels of one
// app version (the status's reconcile time and SHA).
const cache = new Map<string, Promise<unknown>>();

export function cachedGet<T>(path: string, version: string): Promise<T> {
  const key = `${path}@${version}`;
  let p = cache.get(key);
  if (!p) {
    p = get<T>(path);
    p.catch(() => cache.delete(key));
    cache.set(key, p);
    if (cache.size > 50) cache.delete(cache.keys().next().value as string);
  }
  return p as Promise<T>;
}

type Loaded<T> = { data?: T; error?: unknown; loading: boolean };

function useLoad<T>(path: string | null, version: string): Loaded<T> {
  const [s, set] = useState<Loaded<T>>({ loading: !!path });
  useEffect(() => {
    if (!path) {
      set({ loading: false });
      return undefined;
    }
    let live = true;
    set((x) => ({ ...x, loading: true }));
    cachedGet<T>(path, version).then(
      (data) => live && set({ data, loading: false }),
      (error) => live && set({ error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [path, version]);
  return s;
}

function sameObject(o: KubeObject | null | undefined, it: ResourceItem): boolean {
  if (!o) return false;
  const md = (o.metadata ?? {}) as { name?: string; namespace?: string };
  const [group] = String(o.apiVersion ?? '').includes('/') ? String(o.apiVersion).split('/') : [''];
  return o.kind === it.kind && md.name === it.name && (!md.namespace || !it.namespace || md.namespace === it.namespace) && (group ?? '') === (it.group ?? '');
}

export function eventMatches(e: AppEvent, it: { kind: string; name: string; namespace?: string }): boolean {
  const o = e.object;
  return !!o && o.kind === it.kind && o.name === it.name && (!o.namespace || !it.namespace || o.namespace === it.namespace);
}

function Unavailable({ error, what }: { error: unknown; what: string }) {
  if (error instanceof ApiError && error.notAvailable) {
    return (
      <p className="notice" role="note">
        <Icon name="alert" /> {what} is not available from this server yet ({error.message}).
      </p>
    );
  }
  return <ErrorMessage error={error} what={`${what} could not be loaded`} />;
}

/**
 * ResourcePanel shows one resource: its status, live and desired
 * manifests, a side-by-side diff and its events.
 */
export function ResourcePanel({
  project,
  app,
  item,
  version,
  onClose,
}: {
  project: string;
  app: string;
  item: ResourceItem;
  version: string;
  onClose: () => void;
}) {
  const [tab, setTab] = useState(item.sync === 'OutOfSync' ? 'diff' : 'summary');
  const ref = useRef<HTMLElement>(null);
  useEffect(() => {
    ref.current?.focus();
  }, [item.id]);
  const diff = useLoad<DiffResponse>(item.managed ? appPath(project, app, '/diff') : null, version);
  const diffMissing = diff.error instanceof ApiError && diff.error.notAvailable;
  const manifests = useLoad<ManifestsResponse>(item.managed && diffMissing ? appPath(project, app, '/manifests') : null, version);
  // A child (a Pod, a ReplicaSet) is not in the diff: its live object is
  // read on its own.
  const liveChild = useLoad<KubeObject>(!item.managed && tab === 'live' ? appPath(project, app, '/resource', resourceParams(item)) : null, version);
  const events = useLoad<EventsResponse>(tab === 'events' ? appPath(project, app, '/events') : null, version);

  const entry = diff.data?.resources.find((r) => r.kind === item.kind && r.name === item.name && (r.namespace ?? '') === (item.namespace ?? '') && (r.group ?? '') === (item.group ?? ''));
  const live = entry?.live ?? null;
  const desired = entry?.desired ?? manifests.data?.manifests.find((m) => sameObject(m, item)) ?? null;
  // The server's diff compares what matters (the live object normalised
  // as apply would leave it); the whole objects also differ in the fields
  // the cluster sets (uid, status, defaults).
  const [whole, setWhole] = useState(false);
  const rows = useMemo(() => {
    if (!entry) return null;
    const objects = () => diffTexts(entry.live ? toYAML(entry.live) : '', entry.desired ? toYAML(entry.desired) : '');
    if (whole && (entry.live || entry.desired)) return objects();
    if (entry.diff) return parseUnified(entry.diff);
    if (entry.status === 'Synced') return [];
    return entry.live || entry.desired ? objects() : null;
  }, [entry, whole]);

  const tabs = [
    { id: 'summary', label: 'Summary' },
    { id: 'live', label: 'Live manifest' },
    { id: 'desired', label: 'Desired manifest' },
    { id: 'diff', label: 'Diff' },
    { id: 'events', label: 'Events' },
    // Actions run on the resources the app manages.
    ...(item.managed && item.health !== 'Missing' ? [{ id: 'actions', label: 'Actions' }] : []),
    ...(hasLogs(item) && item.health !== 'Missing' ? [{ id: 'logs', label: 'Logs' }] : []),
  ];
  const manifestTab = (obj: KubeObject | null, what: string, loaded: Loaded<unknown>) => {
    if (!item.managed && what === 'Live manifest') {
      if (liveChild.loading) return <Spinner />;
      if (liveChild.data) return <pre className="code-block" tabIndex={0} aria-label={what}>{toYAML(liveChild.data)}</pre>;
      if (liveChild.error && !(liveChild.error instanceof ApiError && liveChild.error.notAvailable)) return <Unavailable error={liveChild.error} what={what} />;
    }
    if (!item.managed) return <p className="notice">{item.kind} {item.name} is not in Git: Windlass shows it as a child of a managed resource. Its owner's manifests are in its owner's panel.</p>;
    if (loaded.loading) return <Spinner />;
    if (obj) return <pre className="code-block" tabIndex={0} aria-label={what}>{toYAML(obj)}</pre>;
    if (loaded.error) return <Unavailable error={loaded.error} what={what} />;
    return <p className="notice">{what === 'Live manifest' ? 'The resource does not exist in the cluster.' : 'The resource is not in Git (it would be pruned).'}</p>;
  };
  const resEvents = events.data?.events.filter((e) => eventMatches(e, item)) ?? [];

  return (
    <aside className="panel" aria-labelledby="panel-title" ref={ref} tabIndex={-1} onKeyDown={(e) => e.key === 'Escape' && onClose()}>
      <header className="panel-head">
        <div>
          <div className="muted">{item.kind}{item.group ? ` (${item.group})` : ''}</div>
          <h2 id="panel-title">{item.name}</h2>
        </div>
        <button type="button" className="btn btn-plain" onClick={onClose} aria-label="Close the resource panel">
          <Icon name="cross" />
        </button>
      </header>
      <Tabs tabs={tabs} active={tab} onChange={setTab} label="Resource views" />
      {tab === 'summary' && (
        <TabPanel id="summary">
          <dl className="props">
            <dt>Resource</dt>
            <dd>{resourceLabel(item)}</dd>
            <dt>Sync</dt>
            <dd>{item.sync ? <Badge kind="sync" value={item.sync} /> : 'not compared (a child of a managed resource)'}</dd>
            <dt>Health</dt>
            <dd>
              <Badge kind="health" value={item.health} /> {item.healthMessage}
            </dd>
            {item.message && (
              <>
                <dt>Message</dt>
                <dd>{item.message}</dd>
              </>
            )}
            {item.requiresPruning && (
              <>
                <dt>Prune</dt>
                <dd>No longer in Git: a sync with prune deletes it.</dd>
              </>
            )}
          </dl>
        </TabPanel>
      )}
      {tab === 'live' && <TabPanel id="live">{manifestTab(live, 'Live manifest', diff)}</TabPanel>}
      {tab === 'desired' && <TabPanel id="desired">{manifestTab(desired, 'Desired manifest', diffMissing ? manifests : diff)}</TabPanel>}
      {tab === 'diff' && (
        <TabPanel id="diff">
          {!item.managed ? (
            <p className="notice">Only resources in Git have a diff.</p>
          ) : diff.loading ? (
            <Spinner />
          ) : rows ? (
            <>
              {entry?.live && entry.desired && (
                <div className="check">
                  <input id="diff-whole" type="checkbox" checked={whole} onChange={(e) => setWhole(e.target.checked)} />
                  <label htmlFor="diff-whole">Compare the whole objects, with the fields the cluster sets</label>
                </div>
              )}
              <DiffView rows={rows} />
            </>
          ) : diff.error ? (
            <Unavailable error={diff.error} what="The diff" />
          ) : (
            <p className="notice">No diff for this resource.</p>
          )}
        </TabPanel>
      )}
      {tab === 'events' && (
        <TabPanel id="events">
          {events.loading ? (
            <Spinner />
          ) : events.error ? (
            <Unavailable error={events.error} what="Events" />
          ) : (
            <EventTable events={resEvents} ofOne />
          )}
        </TabPanel>
      )}
      {tab === 'actions' && (
        <TabPanel id="actions">
          <ResourceActions project={project} app={app} item={item} />
        </TabPanel>
      )}
      {tab === 'logs' && (
        <TabPanel id="logs">
          <LogViewer project={project} app={app} item={item} />
        </TabPanel>
      )}
    </aside>
  );
}

/**
 * EventTable lists events, newest first. In a resource's panel (narrow,
 * and every event about that resource) the object column is left out and
 * the type is the warning's icon, so that the message has the room.
 */
export function EventTable({ events, ofOne }: { events: AppEvent[]; ofOne?: boolean }) {
  if (events.length === 0) return <p className="empty">No events.</p>;
  return (
    <div className="table-wrap">
      <table className="table events">
        <caption className="sr-only">Events, newest first</caption>
        <THead cols={ofOne ? ['Time', 'Reason', 'Message', 'Source'] : ['Time', 'Type', 'Reason', 'Object', 'Message', 'Source']} />
        <tbody>
          {events.map((e, i) => (
            <tr key={i} className={e.type === 'Warning' ? 'row-warning' : undefined}>
              <td>
                <time dateTime={e.time}>{dateTime(e.time)}</time>
              </td>
              {!ofOne && (
                <td>
                  {e.type === 'Warning' && <Icon name="alert" />} {e.type}
                </td>
              )}
              <td>
                {ofOne && e.type === 'Warning' && (
                  <span title="Warning">
                    <Icon name="alert" />
                    <span className="sr-only">Warning: </span>
                  </span>
                )}{' '}
                {e.reason}
              </td>
              {!ofOne && <td>{e.object?.kind ? resourceLabel({ kind: e.object.kind, namespace: e.object.namespace, name: e.object.name ?? '' }) : ''}</td>}
              <td className="msg">{e.message}</td>
              <td>{e.source ?? 'windlass'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
