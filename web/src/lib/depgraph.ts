/** An app of a dependency graph: "<project>/<name>". */
export type AppID = string;

/** ref is the ID of a dependsOn entry of an app in project. */
export function depRef(project: string, entry: string): AppID {
  return entry.includes('/') ? entry : `${project}/${entry}`;
}

export interface Placed {
  id: AppID;
  col: number;
  row: number;
}

/** An edge from a dependency to the app that waits for it. */
export interface Edge {
  from: AppID;
  to: AppID;
}

export interface DepLayout {
  placed: Placed[];
  edges: Edge[];
  cols: number;
  rows: number;
}

/**
 * layoutDependencies places root and what it depends on, directly or not,
 * in columns: an app's column is its longest path from root, counted from
 * the right, so that every edge goes left to right (dependency first).
 * deps maps each known app to its dependencies; apps it does not know
 * have none. A cycle (which the API refuses) is cut where it closes.
 */
export function layoutDependencies(root: AppID, deps: Map<AppID, AppID[]>): DepLayout {
  const depth = new Map<AppID, number>([[root, 0]]);
  const edges: Edge[] = [];
  const seen = new Set<string>();
  const walk = (id: AppID, d: number, path: Set<AppID>) => {
    for (const dep of deps.get(id) ?? []) {
      if (path.has(dep)) continue;
      const key = `${dep}>${id}`;
      if (!seen.has(key)) {
        seen.add(key);
        edges.push({ from: dep, to: id });
      }
      if ((depth.get(dep) ?? -1) < d + 1) {
        depth.set(dep, d + 1);
        path.add(dep);
        walk(dep, d + 1, path);
        path.delete(dep);
      }
    }
  };
  walk(root, 0, new Set([root]));
  const max = Math.max(...depth.values());
  const columns = new Map<number, AppID[]>();
  for (const [id, d] of depth) {
    const col = max - d;
    columns.set(col, [...(columns.get(col) ?? []), id]);
  }
  const placed: Placed[] = [];
  let rows = 0;
  for (const [col, ids] of columns) {
    ids.sort();
    ids.forEach((id, row) => placed.push({ id, col, row }));
    rows = Math.max(rows, ids.length);
  }
  placed.sort((a, b) => a.col - b.col || a.row - b.row);
  return { placed, edges, cols: max + 1, rows };
}

/**
 * withDependents adds the apps that depend on root (its dependents) in a
 * column right of root, each with an edge from root: they wait for it.
 * A dependent already placed (a cycle, which the API refuses) is left.
 */
export function withDependents(layout: DepLayout, root: AppID, dependents: AppID[]): DepLayout {
  const placed = new Set(layout.placed.map((p) => p.id));
  const ids = [...new Set(dependents)].filter((id) => !placed.has(id)).sort();
  if (!ids.length) return layout;
  const col = layout.cols;
  return {
    placed: [...layout.placed, ...ids.map((id, row) => ({ id, col, row }))],
    edges: [...layout.edges, ...ids.map((id) => ({ from: root, to: id }))],
    cols: col + 1,
    rows: Math.max(layout.rows, ids.length),
  };
}
