// Formatting of revisions, times and durations.

/**
 * shortSHA shortens a full commit SHA to 7 characters, and an OCI digest
 * (an OCI source's revision) to its algorithm and 8 characters,
 * sha256:abcd1234; other revisions stay.
 */
export function shortSHA(rev?: string): string {
  if (!rev) return '';
  if (/^[0-9a-f]{40}$/i.test(rev) || /^[0-9a-f]{64}$/i.test(rev)) return rev.slice(0, 7);
  const digest = /^([a-z0-9]+(?:[+._-][a-z0-9]+)*):([0-9a-f]{32,})$/i.exec(rev);
  return digest ? `${digest[1]}:${digest[2].slice(0, 8)}` : rev;
}

function valid(d?: string | null): Date | null {
  if (!d) return null;
  const t = new Date(d);
  return Number.isNaN(t.getTime()) || t.getUTCFullYear() < 1971 ? null : t;
}

/** timeAgo says how long ago a time was ("3 min ago"). */
export function timeAgo(d?: string | null, now = Date.now()): string {
  const t = valid(d);
  if (!t) return '';
  const s = Math.round((now - t.getTime()) / 1000);
  if (s < 5) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/** duration between two times ("1 m 5 s"); empty when either is missing. */
export function duration(start?: string | null, end?: string | null): string {
  const a = valid(start);
  const b = valid(end);
  if (!a || !b) return '';
  const ms = Math.max(0, b.getTime() - a.getTime());
  if (ms < 1000) return `${ms} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} m ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} m`;
}

/** dateTime renders a time in the reader's locale, or '' when missing. */
export function dateTime(d?: string | null): string {
  const t = valid(d);
  return t ? t.toLocaleString() : '';
}

/** syncNumber is the n of a sync ID sync/<project>/<app>/<n>. */
export function syncNumber(id: string): string {
  const n = id.split('/').pop() ?? id;
  return /^\d+$/.test(n) ? `#${n}` : id;
}

/** resourceLabel is "Kind namespace/name". */
export function resourceLabel(r: { kind: string; namespace?: string; name: string }): string {
  return `${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
}

/** keyValues lists labels or annotations as "key=value", sorted by key. */
export function keyValues(kv?: Record<string, string>): string[] {
  return Object.keys(kv ?? {})
    .sort()
    .map((k) => `${k}=${kv![k]}`);
}
