// The resource tree's layout, as Argo CD draws it: the application at the
// left, its managed resources in the next column, their children
// (ReplicaSets, Pods, Jobs, EndpointSlices) further right. Each leaf takes
// a row; a parent is centred on its children.

import type { ResourceKey, ResourceStatus, TreeNode } from '../api/types';

export const ROOT_ID = '__app__';

export interface LayoutInput {
  id: string;
  /** The parents' ids; none (or unknown ones) for a managed resource. */
  parents: string[];
  kind: string;
  name: string;
}

export interface Placed {
  id: string;
  col: number;
  row: number;
  x: number;
  y: number;
  /** The node's width: its column's. */
  w: number;
}

export interface Edge {
  from: string;
  to: string;
  path: string;
}

export interface Layout {
  nodes: Map<string, Placed>;
  edges: Edge[];
  width: number;
  height: number;
}

export const NODE_W = 230;
export const NODE_H = 56;
const GAP_X = 70;
const GAP_Y = 16;

/** Kinds in the order their siblings are shown. */
const kindOrder = [
  'Namespace', 'ServiceAccount', 'Secret', 'ConfigMap', 'PersistentVolumeClaim', 'Role', 'RoleBinding',
  'ClusterRole', 'ClusterRoleBinding', 'Service', 'Deployment', 'StatefulSet', 'DaemonSet', 'CronJob', 'Job',
  'ReplicaSet', 'Pod', 'Ingress', 'EndpointSlice',
];

function rank(kind: string): number {
  const i = kindOrder.indexOf(kind);
  return i < 0 ? kindOrder.length : i;
}

export function compareNodes(a: { kind: string; name: string }, b: { kind: string; name: string }): number {
  return rank(a.kind) - rank(b.kind) || a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name);
}

/**
 * layoutTree places the nodes below a root (the application). A node with
 * several parents is placed under the first one and linked to all of
 * them; a node whose parents are all unknown hangs off the root. A column
 * is as wide as its widest node needs (widths, by id; NODE_W at least),
 * so that no name or status is cut.
 */
export function layoutTree(items: LayoutInput[], widths?: ReadonlyMap<string, number>): Layout {
  const byId = new Map(items.map((n) => [n.id, n]));
  const children = new Map<string, LayoutInput[]>();
  const extraEdges: [string, string][] = [];
  for (const n of items) {
    const known = n.parents.filter((p) => p !== n.id && byId.has(p));
    const parent = known[0] ?? ROOT_ID;
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent)!.push(n);
    for (const p of known.slice(1)) extraEdges.push([p, n.id]);
  }
  for (const list of children.values()) list.sort(compareNodes);

  const nodes = new Map<string, Placed>();
  let nextRow = 0;
  let maxCol = 0;
  // Depth-first; a cycle (which ownerReferences should not form) is cut.
  const place = (id: string, col: number, seen: Set<string>): number => {
    maxCol = Math.max(maxCol, col);
    const kids = (children.get(id) ?? []).filter((k) => !seen.has(k.id));
    let row: number;
    if (kids.length === 0) {
      row = nextRow++;
    } else {
      const rows = kids.map((k) => place(k.id, col + 1, new Set(seen).add(k.id)));
      row = (rows[0] + rows[rows.length - 1]) / 2;
    }
    nodes.set(id, { id, col, row, x: 0, y: row * (NODE_H + GAP_Y), w: NODE_W });
    return row;
  };
  place(ROOT_ID, 0, new Set([ROOT_ID]));
  // Nodes left out by a cycle go at the bottom.
  for (const n of items) {
    if (!nodes.has(n.id)) {
      const row = nextRow++;
      maxCol = Math.max(maxCol, 1);
      nodes.set(n.id, { id: n.id, col: 1, row, x: 0, y: row * (NODE_H + GAP_Y), w: NODE_W });
    }
  }
  const colW = new Array<number>(maxCol + 1).fill(NODE_W);
  for (const p of nodes.values()) colW[p.col] = Math.max(colW[p.col], Math.ceil(widths?.get(p.id) ?? 0));
  const colX = [0];
  for (let c = 1; c <= maxCol; c++) colX.push(colX[c - 1] + colW[c - 1] + GAP_X);
  for (const p of nodes.values()) {
    p.x = colX[p.col];
    p.w = colW[p.col];
  }

  const edges: Edge[] = [];
  const link = (from: string, to: string) => {
    const a = nodes.get(from);
    const b = nodes.get(to);
    if (!a || !b) return;
    const x1 = a.x + a.w;
    const y1 = a.y + NODE_H / 2;
    const x2 = b.x;
    const y2 = b.y + NODE_H / 2;
    const mid = (x1 + x2) / 2;
    edges.push({ from, to, path: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}` });
  };
  for (const [parent, kids] of children) for (const k of kids) link(parent, k.id);
  for (const [p, c] of extraEdges) link(p, c);
  return {
    nodes,
    edges,
    width: colX[maxCol] + colW[maxCol],
    height: Math.max(1, nextRow) * (NODE_H + GAP_Y) - GAP_Y,
  };
}

/** resourceId identifies a resource by group, kind, namespace and name. */
export function resourceId(k: ResourceKey): string {
  return `${k.group ?? ''}/${k.kind}/${k.namespace ?? ''}/${k.name}`;
}

/** A node of the drawn tree: a tree node merged with its compared status. */
export interface ResourceItem extends ResourceKey {
  id: string;
  parents: string[];
  managed: boolean;
  health?: string;
  healthMessage?: string;
  sync?: string;
  message?: string;
  requiresPruning?: boolean;
}

/**
 * mergeTree joins the live tree (which knows children and their health)
 * with the compared resources (which know the sync status, and include
 * resources missing from the cluster). Without a tree, only the compared
 * resources are shown.
 */
export function mergeTree(resources: ResourceStatus[], tree: TreeNode[] | null): ResourceItem[] {
  const out: ResourceItem[] = [];
  const seen = new Set<string>();
  const uidToId = new Map<string, string>();
  for (const n of tree ?? []) uidToId.set(n.uid, resourceId(n));
  const status = new Map(resources.map((r) => [resourceId(r), r]));
  for (const n of tree ?? []) {
    const id = resourceId(n);
    if (seen.has(id)) continue;
    seen.add(id);
    const s = status.get(id);
    out.push({
      group: n.group, kind: n.kind, namespace: n.namespace, name: n.name, id,
      parents: (n.parents ?? []).map((uid) => uidToId.get(uid)).filter((x): x is string => !!x),
      managed: !n.parents?.length,
      health: s?.health ?? n.health, healthMessage: s?.healthMessage ?? n.healthMessage,
      sync: s?.status, message: s?.message, requiresPruning: s?.requiresPruning,
    });
  }
  for (const r of resources) {
    const id = resourceId(r);
    if (seen.has(id)) continue;
    seen.add(id);
    out.push({
      group: r.group, kind: r.kind, namespace: r.namespace, name: r.name, id, parents: [], managed: true,
      health: r.health, healthMessage: r.healthMessage, sync: r.status, message: r.message, requiresPruning: r.requiresPruning,
    });
  }
  return out;
}
