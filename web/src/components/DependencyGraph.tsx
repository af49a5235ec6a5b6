import { useEffect, useState } from 'react';
import { ApiError, appPath, get } from '../api/client';
import type { AppView, DependencyWait } from '../api/types';
import { type AppID, depRef, layoutDependencies, withDependents } from '../lib/depgraph';
import { appURL, Link } from '../router';
import { Badge } from './ui';

/** maxApps bounds the apps the graph reads. */
const maxApps = 30;

const nodeW = 250;
const nodeH = 58;
const gapX = 56;
const gapY = 14;

/** A dependency as read: its view, or why it could not be read. */
interface Known {
  view?: AppView;
  missing?: boolean;
  error?: boolean;
}

/**
 * DependencyGraph draws the apps this one depends on (spec.dependsOn),
 * directly or not, and the apps that depend on it (view.dependents,
 * from the API), each with its sync and health, dependencies left of
 * what waits for them; the ones a pending sync waits for are marked.
 */
export function DependencyGraph({ project, view, version }: { project: string; view: AppView; version: string }) {
  const root: AppID = `${project}/${view.spec.name}`;
  const [known, setKnown] = useState<Map<AppID, Known>>(new Map());
  const direct = (view.spec.dependsOn ?? []).map((d) => depRef(project, d));
  const dependents = view.dependents ?? [];
  const key = `${direct.join(',')}|${dependents.join(',')}`;
  useEffect(() => {
    if (!direct.length && !dependents.length) return undefined;
    let alive = true;
    (async () => {
      const out = new Map<AppID, Known>();
      const read = async (id: AppID) => {
        const [p, n] = id.split('/');
        try {
          const v = await get<AppView>(appPath(p, n));
          out.set(id, { view: v });
          return v;
        } catch (e) {
          out.set(id, e instanceof ApiError && e.status === 404 ? { missing: true } : { error: true });
          return undefined;
        }
      };
      const queue = [...direct];
      while (queue.length && out.size < maxApps) {
        const id = queue.shift()!;
        if (out.has(id) || id === root) continue;
        const v = await read(id);
        queue.push(...(v?.spec.dependsOn ?? []).map((d) => depRef(id.split('/')[0], d)));
      }
      // Dependents are drawn one level deep: what waits for this app.
      for (const id of dependents) {
        if (out.size >= maxApps) break;
        if (!out.has(id) && id !== root) await read(id);
      }
      if (alive) setKnown(out);
    })();
    return () => {
      alive = false;
    };
  }, [root, key, version]);
  if (!direct.length && !dependents.length) return null;

  const deps = new Map<AppID, AppID[]>([[root, direct]]);
  for (const [id, k] of known) {
    if (dependents.includes(id)) continue;
    const [p] = id.split('/');
    deps.set(id, (k.view?.spec.dependsOn ?? []).map((d) => depRef(p, d)));
  }
  const layout = withDependents(layoutDependencies(root, deps), root, dependents);
  const waits = new Map<AppID, DependencyWait>();
  for (const w of view.status.operation?.waitingFor ?? []) waits.set(`${w.app.project}/${w.app.name}`, w);
  const pos = new Map(layout.placed.map((p) => [p.id, { x: p.col * (nodeW + gapX), y: p.row * (nodeH + gapY) }]));
  const width = layout.cols * (nodeW + gapX) - gapX;
  const height = layout.rows * (nodeH + gapY) - gapY;
  const label = (id: AppID) => (id.startsWith(`${project}/`) ? id.slice(project.length + 1) : id);

  return (
    <section className="depgraph" aria-label="Dependencies">
      <h2>Dependencies</h2>
      <div className="depgraph-canvas" role="group" aria-label="Dependency graph" style={{ width, height }}>
        <svg className="depgraph-edges" width={width} height={height} aria-hidden="true">
          <defs>
            <marker id="dep-arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="8" markerHeight="8" orient="auto">
              <path d="M0,0 L8,4 L0,8 z" />
            </marker>
          </defs>
          {layout.edges.map((e) => {
            const a = pos.get(e.from)!;
            const b = pos.get(e.to)!;
            const x1 = a.x + nodeW;
            const y1 = a.y + nodeH / 2;
            const x2 = b.x;
            const y2 = b.y + nodeH / 2;
            const mx = (x1 + x2) / 2;
            return <path key={`${e.from}>${e.to}`} className={waits.has(e.from) && e.to === root ? 'dep-wait' : undefined} d={`M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`} markerEnd="url(#dep-arrow)" />;
          })}
        </svg>
        {layout.placed.map((p) => {
          const at = pos.get(p.id)!;
          const k = known.get(p.id);
          const w = waits.get(p.id);
          const [pp, pn] = p.id.split('/');
          const st = p.id === root ? view.status : k?.view?.status;
          return (
            <div
              key={p.id}
              className={`dep-node${p.id === root ? ' dep-root' : ''}${w ? ' dep-waited' : ''}${k?.missing ? ' dep-missing' : ''}`}
              data-app={p.id}
              style={{ left: at.x, top: at.y, width: nodeW, height: nodeH }}
              title={w ? `A sync waits for ${label(p.id)}: it ${w.reason}` : undefined}
            >
              {p.id === root || k?.missing ? (
                <strong className="dep-name" title={p.id}>
                  {label(p.id)}
                </strong>
              ) : (
                <Link className="dep-name" to={appURL(pp, pn)} title={p.id}>
                  {label(p.id)}
                </Link>
              )}
              <span className="dep-status">
                {k?.missing ? (
                  <span className="muted">does not exist</span>
                ) : k?.error ? (
                  <span className="muted">not readable</span>
                ) : st ? (
                  <>
                    <Badge kind="sync" value={st.sync} />
                    <Badge kind="health" value={st.health} />
                  </>
                ) : (
                  <span className="muted">…</span>
                )}
              </span>
            </div>
          );
        })}
      </div>
    </section>
  );
}
