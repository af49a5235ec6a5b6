import type { AppCondition } from '../api/types';

/** How bad a condition is, from its type as Argo CD names them (…Error, …Warning). */
export type Severity = 'error' | 'warning' | 'info';

export function severity(type: string): Severity {
  if (type.endsWith('Error')) return 'error';
  if (type.endsWith('Warning')) return 'warning';
  return 'info';
}

const rank: Record<Severity, number> = { error: 0, warning: 1, info: 2 };

/** The conditions, errors first, then warnings, then the rest; each group in its given order. */
export function ordered(conditions: AppCondition[]): AppCondition[] {
  return conditions
    .map((c, i) => ({ c, i }))
    .sort((a, b) => rank[severity(a.c.type)] - rank[severity(b.c.type)] || a.i - b.i)
    .map(({ c }) => c);
}

/** The worst severity among the conditions; undefined for none. */
export function worst(conditions: AppCondition[]): Severity | undefined {
  const first = ordered(conditions)[0];
  return first && severity(first.type);
}

/** Counts by severity, as "1 error, 2 warnings"; "" for none. */
export function summary(conditions: AppCondition[]): string {
  const n: Record<Severity, number> = { error: 0, warning: 0, info: 0 };
  for (const c of conditions) n[severity(c.type)]++;
  const words: [Severity, string][] = [
    ['error', 'error'],
    ['warning', 'warning'],
    ['info', 'condition'],
  ];
  return words
    .filter(([s]) => n[s] > 0)
    .map(([s, w]) => `${n[s]} ${w}${n[s] === 1 ? '' : 's'}`)
    .join(', ');
}
