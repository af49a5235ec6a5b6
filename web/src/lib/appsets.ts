import type { AppSetStatus, AppSetSummary, LabelExpression, RolloutStatus } from '../api/types';

// Pure helpers of the ApplicationSet pages: how generators, a set's state
// and a rollout read to people, and how the list follows its stream.

/** repoName is the last part of a repository URL, without .git. */
export function repoName(url: string): string {
  const parts = url.replace(/\/+$/, '').split('/');
  return (parts[parts.length - 1] ?? url).replace(/\.git$/, '');
}

export type SetState = 'Error' | 'Deleting' | 'Pending' | 'Ready';

/**
 * setState sums a set up: Error when its last pass wrote nothing (the
 * message says why), Deleting, Pending before its first pass, else Ready.
 */
export function setState(s: Pick<AppSetStatus, 'error' | 'deleting'> & { passes?: number }): SetState {
  if (s.error) return 'Error';
  if (s.deleting) return 'Deleting';
  if (s.passes === 0) return 'Pending';
  return 'Ready';
}

/** The rollout controls that apply in a phase (the server says 409 to the others). */
export function rolloutControls(phase: RolloutStatus['phase']): { pause: boolean; resume: boolean; abort: boolean } {
  return {
    pause: phase === 'Progressing',
    resume: phase === 'Paused' || phase === 'Halted',
    abort: phase === 'Progressing' || phase === 'Paused' || phase === 'Halted',
  };
}

/** rolloutRunning says whether a rollout can still move (and is worth reading again). */
export function rolloutRunning(phase: RolloutStatus['phase']): boolean {
  return phase === 'Progressing' || phase === 'Paused' || phase === 'Halted';
}

/** selectorLabel writes a step's match expressions as a label selector. */
export function selectorLabel(exprs?: LabelExpression[]): string {
  if (!exprs?.length) return 'every app';
  return exprs
    .map((e) => {
      const values = `(${(e.values ?? []).join(', ')})`;
      switch (e.operator) {
        case 'In':
          return `${e.key} in ${values}`;
        case 'NotIn':
          return `${e.key} notin ${values}`;
        case 'Exists':
          return e.key;
        case 'DoesNotExist':
          return `!${e.key}`;
        default:
          return `${e.key} ${e.operator} ${values}`;
      }
    })
    .join(', ');
}

/** stepProgress counts a step's apps that are done (Healthy) of all. */
export function stepProgress(apps: { phase: string }[]): { done: number; total: number } {
  return { done: apps.filter((a) => a.phase === 'Healthy').length, total: apps.length };
}

/**
 * applySetEvent applies an event of the set list's stream to the rows: a
 * row replaces the set's or joins the list (kept by name), "deleted"
 * (data: the name as a JSON string) drops it.
 */
export function applySetEvent(rows: AppSetSummary[], event: string, data: string): AppSetSummary[] {
  if (event === 'deleted') {
    const name = JSON.parse(data) as string;
    return rows.filter((r) => r.name !== name);
  }
  const row = JSON.parse(data) as AppSetSummary;
  const out = rows.filter((r) => r.name !== row.name);
  out.push(row);
  out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return out;
}

/** appSetURL is the UI path of a set. */
export function appSetURL(name: string): string {
  return `/applicationsets/${encodeURIComponent(name)}`;
}

/** appSetPath is the API path of a set. */
export function appSetPath(name: string, sub = ''): string {
  return `/api/v1/applicationsets/${encodeURIComponent(name)}${sub}`;
}

/** splitRef splits "<project>/<name>". */
export function splitRef(ref: string): { project: string; name: string } {
  const i = ref.indexOf('/');
  return i < 0 ? { project: 'default', name: ref } : { project: ref.slice(0, i), name: ref.slice(i + 1) };
}
