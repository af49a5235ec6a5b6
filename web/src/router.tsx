import { useEffect, useState, type AnchorHTMLAttributes, type MouseEvent } from 'react';

// A small history router: the UI has a handful of routes, which does not
// warrant a routing library.

const NAVIGATE = 'windlass:navigate';

export interface Location {
  path: string;
  params: URLSearchParams;
}

function current(): Location {
  return { path: window.location.pathname, params: new URLSearchParams(window.location.search) };
}

/** navigate goes to a path in the app (pushState, or replaceState). */
export function navigate(to: string, replace = false): void {
  if (replace) window.history.replaceState(null, '', to);
  else window.history.pushState(null, '', to);
  window.dispatchEvent(new Event(NAVIGATE));
}

/** setParams changes query parameters of the current path (replacing the entry). */
export function setParams(change: Record<string, string | undefined>, push = false): void {
  const params = new URLSearchParams(window.location.search);
  for (const [k, v] of Object.entries(change)) {
    if (v === undefined || v === '') params.delete(k);
    else params.set(k, v);
  }
  const q = params.toString();
  navigate(window.location.pathname + (q ? `?${q}` : ''), !push);
}

export function useLocation(): Location {
  const [loc, setLoc] = useState(current);
  useEffect(() => {
    const update = () => setLoc(current());
    window.addEventListener('popstate', update);
    window.addEventListener(NAVIGATE, update);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener(NAVIGATE, update);
    };
  }, []);
  return loc;
}

/** match matches a path against a pattern with :params, returning them or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const ps = pattern.split('/').filter(Boolean);
  const xs = path.split('/').filter(Boolean);
  if (ps.length !== xs.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < ps.length; i++) {
    if (ps[i].startsWith(':')) {
      try {
        out[ps[i].slice(1)] = decodeURIComponent(xs[i]);
      } catch {
        return null;
      }
    } else if (ps[i] !== xs[i]) return null;
  }
  return out;
}

/** Link is an anchor that navigates inside the app without a reload. */
export function Link({ to, onClick, ...rest }: { to: string } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  const click = (e: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return <a href={to} onClick={click} {...rest} />;
}

/** appURL is the UI path of an application. */
export function appURL(project: string, name: string, params: Record<string, string> = {}): string {
  const q = new URLSearchParams(params).toString();
  return `/applications/${encodeURIComponent(project)}/${encodeURIComponent(name)}${q ? `?${q}` : ''}`;
}
