import { describe, expect, it } from 'vitest';
import { layoutTree, mergeTree, NODE_H, NODE_W, resourceId, ROOT_ID } from './tree';

const n = (id: string, kind: string, parents: string[] = []) => ({ id, kind, name: id, parents });

describe('layoutTree', () => {
  it('places Deployment → ReplicaSet → Pods in columns, parents centred on their children', () => {
    const l = layoutTree([
      n('svc', 'Service'),
      n('deploy', 'Deployment'),
      n('rs', 'ReplicaSet', ['deploy']),
      n('pod-a', 'Pod', ['rs']),
      n('pod-b', 'Pod', ['rs']),
    ]);
    const at = (id: string) => l.nodes.get(id)!;
    expect([at(ROOT_ID).col, at('deploy').col, at('rs').col, at('pod-a').col]).toEqual([0, 1, 2, 3]);
    // Service sorts before Deployment; each leaf takes a row.
    expect(at('svc').row).toBe(0);
    expect([at('pod-a').row, at('pod-b').row]).toEqual([1, 2]);
    expect(at('rs').row).toBe(1.5);
    expect(at('deploy').row).toBe(1.5);
    expect(at(ROOT_ID).row).toBe(0.75);
    expect(l.edges.map((e) => `${e.from}>${e.to}`).sort()).toEqual(
      [`${ROOT_ID}>deploy`, `${ROOT_ID}>svc`, 'deploy>rs', 'rs>pod-a', 'rs>pod-b'].sort(),
    );
    expect(l.height).toBeGreaterThanOrEqual(3 * NODE_H);
  });
  it('hangs nodes with unknown parents off the root and survives cycles', () => {
    const l = layoutTree([n('a', 'Pod', ['ghost']), n('b', 'Pod', ['c']), n('c', 'Pod', ['b'])]);
    expect(l.nodes.get('a')!.col).toBe(1);
    expect(l.nodes.has('b') && l.nodes.has('c')).toBe(true);
  });
  it('widens a column to its widest node, and shifts the columns after it', () => {
    const items = [n('deploy', 'Deployment'), n('rs', 'ReplicaSet', ['deploy']), n('cm', 'ConfigMap')];
    const l = layoutTree(items, new Map([['deploy', NODE_W + 100.2]]));
    const at = (id: string) => l.nodes.get(id)!;
    expect([at('deploy').w, at('cm').w, at('rs').w, at(ROOT_ID).w]).toEqual([NODE_W + 101, NODE_W + 101, NODE_W, NODE_W]);
    expect(at('rs').x - at('deploy').x).toBe(layoutTree(items).nodes.get('rs')!.x - layoutTree(items).nodes.get('deploy')!.x + 101);
    expect(l.width).toBe(at('rs').x + NODE_W);
    expect(l.edges.find((e) => e.to === 'rs')!.path.startsWith(`M${at('deploy').x + NODE_W + 101},`)).toBe(true);
  });
  it('links a node with two parents to both', () => {
    const l = layoutTree([n('p1', 'Job'), n('p2', 'Job'), n('pod', 'Pod', ['p1', 'p2'])]);
    expect(l.edges.filter((e) => e.to === 'pod').map((e) => e.from).sort()).toEqual(['p1', 'p2']);
  });
});

describe('mergeTree', () => {
  it('joins tree nodes and compared resources, keeping resources missing live', () => {
    const items = mergeTree(
      [
        { group: 'apps', kind: 'Deployment', namespace: 'ns', name: 'web', status: 'OutOfSync', health: 'Healthy' },
        { kind: 'ConfigMap', namespace: 'ns', name: 'gone', status: 'OutOfSync', health: 'Missing' },
      ],
      [
        { group: 'apps', kind: 'Deployment', namespace: 'ns', name: 'web', uid: 'u1', managed: true, health: 'Healthy' },
        { group: 'apps', kind: 'ReplicaSet', namespace: 'ns', name: 'web-1', uid: 'u2', parents: ['u1'], health: 'Healthy' },
      ],
    );
    expect(items.map((i) => [i.kind, i.sync ?? '', i.parents.join(), i.managed])).toEqual([
      ['Deployment', 'OutOfSync', '', true],
      ['ReplicaSet', '', resourceId({ group: 'apps', kind: 'Deployment', namespace: 'ns', name: 'web' }), false],
      ['ConfigMap', 'OutOfSync', '', true],
    ]);
  });
});
