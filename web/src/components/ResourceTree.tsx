import { useLayoutEffect, useMemo, useRef, useState } from 'react';
import { resourceLabel } from '../lib/format';
import { layoutTree, NODE_H, ROOT_ID, type ResourceItem } from '../lib/tree';
import { Icon } from './icons';
import { Badge, THead } from './ui';

/** Short kind labels, as Argo CD shows them on nodes. */
const kindAbbrev: Record<string, string> = {
  Deployment: 'deploy',
  ReplicaSet: 'rs',
  Pod: 'pod',
  Service: 'svc',
  ConfigMap: 'cm',
  Secret: 'secret',
  StatefulSet: 'sts',
  DaemonSet: 'ds',
  Job: 'job',
  CronJob: 'cj',
  Ingress: 'ing',
  EndpointSlice: 'eps',
  Namespace: 'ns',
  ServiceAccount: 'sa',
  PersistentVolumeClaim: 'pvc',
};

export function kindLabel(kind: string): string {
  return kindAbbrev[kind] ?? kind.toLowerCase().slice(0, 6);
}

/**
 * naturalWidth is the width a node needs to show its name and badges
 * whole: both are as wide as their content (see .node-name), whatever
 * the node's width.
 */
function naturalWidth(node: HTMLElement): number {
  const box = node.getBoundingClientRect();
  const style = getComputedStyle(node);
  let right = box.left;
  for (const part of node.querySelectorAll<HTMLElement>('.node-name, .node-badges')) right = Math.max(right, part.getBoundingClientRect().right);
  return right - box.left + parseFloat(style.paddingRight) + parseFloat(style.borderRightWidth);
}

/**
 * ResourceTree draws the application and its resources as a graph: a
 * column per level, an SVG curve from each owner to each child. Nodes are
 * buttons, so the tree is keyboard navigable; each says its kind, name,
 * sync status and health in text. A column is as wide as its widest
 * node's content, measured after each render.
 */
export function ResourceTree({
  appName,
  sync,
  health,
  items,
  selected,
  onSelect,
}: {
  appName: string;
  sync: string;
  health: string;
  items: ResourceItem[];
  selected?: string;
  onSelect: (id: string) => void;
}) {
  const [widths, setWidths] = useState<ReadonlyMap<string, number>>(new Map());
  const layout = useMemo(
    () => layoutTree(items.map((i) => ({ id: i.id, parents: i.parents, kind: i.kind, name: i.name })), widths),
    [items, widths],
  );
  const ref = useRef<HTMLDivElement>(null);
  // The content's widths do not depend on the nodes' widths, so this
  // settles after one more render.
  useLayoutEffect(() => {
    const next = new Map<string, number>();
    for (const n of ref.current?.querySelectorAll<HTMLElement>('[data-node]') ?? []) next.set(n.dataset.node!, Math.ceil(naturalWidth(n)));
    if (next.size !== widths.size || [...next].some(([id, w]) => widths.get(id) !== w)) setWidths(next);
  });
  const root = layout.nodes.get(ROOT_ID)!;
  return (
    <div className="tree-scroll">
      <div className="tree" ref={ref} style={{ width: layout.width + 8, height: layout.height + 8 }} role="group" aria-label="Resource tree">
        <svg className="tree-edges" width={layout.width + 8} height={layout.height + 8} aria-hidden="true">
          {layout.edges.map((e) => (
            <path key={`${e.from}>${e.to}`} d={e.path} />
          ))}
        </svg>
        <div className="tree-node tree-root" data-node={ROOT_ID} style={{ left: root.x, top: root.y, width: root.w, height: NODE_H }}>
          <span className="kind-tag">app</span>
          <span className="node-name" title={appName}>
            {appName}
          </span>
          <span className="node-badges">
            <Badge kind="sync" value={sync} />
            <Badge kind="health" value={health} />
          </span>
        </div>
        {items.map((it) => {
          const p = layout.nodes.get(it.id);
          if (!p) return null;
          return (
            <button
              key={it.id}
              type="button"
              className={`tree-node${selected === it.id ? ' tree-selected' : ''}${it.managed ? '' : ' tree-child'}`}
              style={{ left: p.x, top: p.y, width: p.w, height: NODE_H }}
              onClick={() => onSelect(it.id)}
              aria-pressed={selected === it.id}
              data-node={it.id}
              data-kind={it.kind}
              data-name={it.name}
              aria-label={`${resourceLabel(it)}${it.sync ? `, ${it.sync}` : ''}${it.health ? `, ${it.health}` : ''}`}
            >
              <span className="kind-tag" title={it.kind}>
                {kindLabel(it.kind)}
              </span>
              <span className="node-name" title={resourceLabel(it)}>
                {it.name}
              </span>
              <span className="node-badges">
                {it.sync && <Badge kind="sync" value={it.sync} />}
                {it.health && <Badge kind="health" value={it.health} />}
                {it.requiresPruning && (
                  <span className="badge st-outofsync" title="Not in Git any more: a sync with prune deletes it">
                    <Icon name="trash" size={12} /> prune
                  </span>
                )}
              </span>
            </button>
          );
        })}
      </div>
    </div>
  );
}

/** ResourceList is the tree as a table. */
export function ResourceList({ items, onSelect, selected }: { items: ResourceItem[]; onSelect: (id: string) => void; selected?: string }) {
  const byId = new Map(items.map((i) => [i.id, i]));
  return (
    <div className="table-wrap">
      <table className="table">
        <caption className="sr-only">Resources of the application</caption>
        <THead cols={['Kind', 'Namespace', 'Name', 'Sync', 'Health', 'Owner', 'Message']} />
        <tbody>
          {items.map((it) => {
            const owner = it.parents.map((p) => byId.get(p)).find(Boolean);
            return (
              <tr key={it.id} className={selected === it.id ? 'row-selected' : undefined}>
                <td>{it.kind}</td>
                <td>{it.namespace}</td>
                <td>
                  <button type="button" className="link" onClick={() => onSelect(it.id)}>
                    {it.name}
                  </button>
                </td>
                <td>{it.sync ? <Badge kind="sync" value={it.sync} /> : <span className="muted">—</span>}</td>
                <td>{it.health ? <Badge kind="health" value={it.health} /> : <span className="muted">—</span>}</td>
                <td>{owner ? resourceLabel(owner) : <span className="muted">managed</span>}</td>
                <td className="msg">{it.message || it.healthMessage}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
