// The parameters tab's model: a source's tool options (Helm, Kustomize,
// directory) as form fields, and the JSON merge patch (RFC 7386) of the
// spec that the edited fields make.

import type { Application, Source } from '../api/types';

export type Tool = 'helm' | 'kustomize' | 'directory';

/** The form: text fields, lists one item a line. */
export interface ParamsForm {
  releaseName: string;
  values: string;
  valueFiles: string;
  /** name=value, one a line. */
  parameters: string;
  images: string;
  /** name=count, one a line. */
  replicas: string;
  namePrefix: string;
  nameSuffix: string;
  namespace: string;
  recurse: boolean;
  include: string;
  exclude: string;
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** toolOf is the tool whose options a source sets, as the server picks it; a chart is Helm. */
export function toolOf(s: Source): Tool | undefined {
  const o = s as Source & Obj;
  if (o.helm || s.chart) return 'helm';
  if (o.kustomize) return 'kustomize';
  if (o.directory) return 'directory';
  return undefined;
}

const lines = (v: unknown) => (Array.isArray(v) ? v.map(String).join('\n') : '');
const splitLines = (s: string) => s.split('\n').map((x) => x.trim()).filter(Boolean);
const str = (v: unknown) => (typeof v === 'string' ? v : '');

export function formOf(s: Source): ParamsForm {
  const o = s as Source & Obj;
  const helm = isObj(o.helm) ? o.helm : {};
  const kust = isObj(o.kustomize) ? o.kustomize : {};
  const dir = isObj(o.directory) ? o.directory : {};
  const params = Array.isArray(helm.parameters) ? (helm.parameters as { name: string; value: string }[]) : [];
  const reps = Array.isArray(kust.replicas) ? (kust.replicas as { name: string; count: number }[]) : [];
  return {
    releaseName: str(helm.releaseName),
    values: str(helm.values),
    valueFiles: lines(helm.valueFiles),
    parameters: params.map((p) => `${p.name}=${p.value}`).join('\n'),
    images: lines(kust.images),
    replicas: reps.map((r) => `${r.name}=${r.count}`).join('\n'),
    namePrefix: str(kust.namePrefix),
    nameSuffix: str(kust.nameSuffix),
    namespace: str(kust.namespace),
    recurse: dir.recurse === true,
    include: str(dir.include),
    exclude: str(dir.exclude),
  };
}

/** parsePairs reads name=value lines; a line without = is an error naming it. */
export function parsePairs(text: string, what: string): { name: string; value: string }[] {
  return splitLines(text).map((l) => {
    const i = l.indexOf('=');
    if (i <= 0) throw new Error(`${what}: "${l}" is not name=value`);
    return { name: l.slice(0, i).trim(), value: l.slice(i + 1).trim() };
  });
}

/** set puts v under k, or removes k when v is empty. */
function set(o: Obj, k: string, v: unknown) {
  if (v === '' || v === false || v === undefined || (Array.isArray(v) && v.length === 0)) delete o[k];
  else o[k] = v;
}

/**
 * withOptions is the source with the form's options of the tool; the
 * options the form does not show are kept. Bad lines throw.
 */
export function withOptions(s: Source, tool: Tool, f: ParamsForm): Source {
  const out = { ...(s as Source & Obj) };
  const cur = isObj(out[tool]) ? { ...(out[tool] as Obj) } : {};
  if (tool === 'helm') {
    set(cur, 'releaseName', f.releaseName.trim());
    set(cur, 'values', f.values.trim() ? f.values.replace(/\s*$/, '\n') : '');
    set(cur, 'valueFiles', splitLines(f.valueFiles));
    // Keep forceString of a parameter that stays.
    const old = new Map(((cur.parameters as Obj[] | undefined) ?? []).map((p) => [p.name, p]));
    set(cur, 'parameters', parsePairs(f.parameters, 'Helm parameters').map((p) => ({ ...old.get(p.name), ...p })));
  } else if (tool === 'kustomize') {
    set(cur, 'images', splitLines(f.images));
    set(
      cur,
      'replicas',
      parsePairs(f.replicas, 'Replicas').map((p) => {
        const count = Number(p.value);
        if (!Number.isInteger(count) || count < 0) throw new Error(`Replicas: the count of ${p.name} is not a whole number`);
        return { name: p.name, count };
      }),
    );
    set(cur, 'namePrefix', f.namePrefix.trim());
    set(cur, 'nameSuffix', f.nameSuffix.trim());
    set(cur, 'namespace', f.namespace.trim());
  } else {
    set(cur, 'recurse', f.recurse);
    set(cur, 'include', f.include.trim());
    set(cur, 'exclude', f.exclude.trim());
  }
  // Empty options still choose the tool (an empty helm: {} renders with Helm).
  out[tool] = cur;
  return out as Source;
}

/** withSource is the spec with its i-th source replaced (source when it has one source). */
export function withSource(spec: Application, i: number, s: Source): Application {
  if (spec.sources?.length) return { ...spec, sources: spec.sources.map((x, j) => (j === i ? s : x)) };
  return { ...spec, source: s };
}

/** mergePatch is the RFC 7386 patch that turns a into b (null removes a key; arrays are whole). */
export function mergePatch(a: Obj, b: Obj): Obj {
  const p: Obj = {};
  for (const k of Object.keys(a)) if (!(k in b)) p[k] = null;
  for (const [k, v] of Object.entries(b)) {
    const old = a[k];
    if (isObj(old) && isObj(v)) {
      const sub = mergePatch(old, v);
      if (Object.keys(sub).length) p[k] = sub;
    } else if (JSON.stringify(old) !== JSON.stringify(v)) p[k] = v;
  }
  return p;
}
