// toYAML renders JSON values (Kubernetes objects) as YAML for reading:
// block style, keys in their given order, strings quoted only when plain
// YAML would read them as something else.

const reserved = /^(?:true|false|yes|no|on|off|y|n|null|~)$/i;
const numeric = /^[-+]?(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$|^0x[0-9a-fA-F]+$|^0o[0-7]+$|^[-+]?\.(?:inf|nan)$/i;
const plainStart = /^[^\s\-?:,[\]{}#&*!|>'"%@`]/;

function quoteNeeded(s: string): boolean {
  return (
    s === '' ||
    reserved.test(s) ||
    numeric.test(s) ||
    !plainStart.test(s) ||
    /\s$/.test(s) ||
    /: |:$| #|[\n\t\r]/.test(s) ||
    /^[-?:](?:\s|$)/.test(s)
  );
}

function scalar(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return quoteNeeded(v) ? JSON.stringify(v) : v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

function isBlock(v: unknown): v is Record<string, unknown> | unknown[] {
  if (Array.isArray(v)) return v.length > 0;
  return v !== null && typeof v === 'object' && Object.keys(v as object).length > 0;
}

function emptyOf(v: unknown): string | null {
  if (Array.isArray(v) && v.length === 0) return '[]';
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v as object).length === 0) return '{}';
  return null;
}

/** A multi-line string as a literal block, or null when it must be quoted. */
function literal(s: string, indent: string): string | null {
  if (!s.includes('\n') || /[\t\r]/.test(s) || /^\s/.test(s)) return null;
  const chomp = s.endsWith('\n') ? (s.endsWith('\n\n') ? '+' : '') : '-';
  const body = (chomp === '-' ? s : s.replace(/\n$/, '')).split('\n');
  return `|${chomp}\n` + body.map((l) => (l ? indent + l : '')).join('\n');
}

function value(v: unknown, indent: string): string {
  const e = emptyOf(v);
  if (e) return ` ${e}`;
  if (typeof v === 'string') {
    const lit = literal(v, indent + '  ');
    if (lit) return ` ${lit}`;
  }
  // As kubectl writes it: a list under a key is not indented.
  if (isBlock(v)) return '\n' + lines(v, Array.isArray(v) ? indent : indent + '  ');
  return ` ${scalar(v)}`;
}

function lines(v: Record<string, unknown> | unknown[], indent: string): string {
  const out: string[] = [];
  if (Array.isArray(v)) {
    for (const item of v) {
      if (isBlock(item) && !Array.isArray(item)) {
        // The first key goes on the dash's line.
        const inner = lines(item, indent + '  ');
        out.push(indent + '- ' + inner.slice(indent.length + 2));
      } else if (isBlock(item)) {
        out.push(indent + '-\n' + lines(item, indent + '  '));
      } else {
        out.push(indent + '-' + value(item, indent));
      }
    }
  } else {
    for (const [k, item] of Object.entries(v)) {
      if (item === undefined) continue;
      out.push(indent + scalar(k) + ':' + value(item, indent));
    }
  }
  return out.join('\n');
}

export function toYAML(v: unknown): string {
  const e = emptyOf(v);
  if (e) return e + '\n';
  if (!isBlock(v)) return scalar(v) + '\n';
  return lines(v, '') + '\n';
}
