import { createContext, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { ApiError, get, query, UNAUTHENTICATED_EVENT } from './api/client';
import type { Check, CheckResult, UserInfo } from './api/types';

// The session (who is logged in) and the caller's permissions, which hide
// or disable the buttons they forbid. The server decides in the end: a
// button shown by mistake gets a 403, which the UI shows as a message.

export interface Session {
  /** undefined while loading, null when logged out. */
  user: UserInfo | null | undefined;
  setUser: (u: UserInfo | null) => void;
  reload: () => Promise<void>;
}

const SessionContext = createContext<Session>({ user: undefined, setUser: () => undefined, reload: async () => undefined });

export function useSession(): Session {
  return useContext(SessionContext);
}

export function SessionProvider({ children }: { children: ReactNode }) {
  const [user, setUserState] = useState<UserInfo | null | undefined>(undefined);
  const setUser = (u: UserInfo | null) => {
    clearPermissions();
    setUserState(u);
  };
  const reload = async () => {
    try {
      setUser(await get<UserInfo>('/api/v1/session/userinfo', { quiet401: true }));
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) setUser(null);
      else throw e;
    }
  };
  useEffect(() => {
    reload().catch(() => setUser(null));
    const onLogout = () => setUser(null);
    window.addEventListener(UNAUTHENTICATED_EVENT, onLogout);
    return () => window.removeEventListener(UNAUTHENTICATED_EVENT, onLogout);
  }, []);
  return <SessionContext.Provider value={{ user, setUser, reload }}>{children}</SessionContext.Provider>;
}

/** Whether a check passed: true, false, or undefined while unknown. */
export type Allowed = boolean | undefined;

const key = (c: Check) => `${c.resource},${c.action},${c.object}`;
const known = new Map<string, boolean>();
const pending = new Map<string, Promise<void>>();
let queued: Check[] = [];
let flush: Promise<void> | null = null;
// When the server has no permission endpoint, every check stays unknown
// and every button shows.
let unsupported = false;
const listeners = new Set<() => void>();

export function clearPermissions(): void {
  known.clear();
  pending.clear();
  unsupported = false;
}

/** maxChecks is the server's limit per request. */
const maxChecks = 50;

async function ask(checks: Check[]): Promise<void> {
  for (let i = 0; i < checks.length; i += maxChecks) {
    const part = checks.slice(i, i + maxChecks);
    try {
      const res = await get<{ results: CheckResult[] }>('/api/v1/session/can' + query({ check: part.map(key) }));
      res.results.forEach((r) => known.set(key(r), r.allowed));
    } catch (e) {
      if (e instanceof ApiError && (e.notAvailable || e.status === 404)) unsupported = true;
    }
  }
  listeners.forEach((l) => l());
}

function request(checks: Check[]): void {
  const missing = checks.filter((c) => !known.has(key(c)) && !pending.has(key(c)));
  if (missing.length === 0 || unsupported) return;
  queued.push(...missing);
  // Batch the checks asked for in the same tick into one request.
  flush ??= Promise.resolve().then(() => {
    const batch = queued;
    queued = [];
    flush = null;
    const p = ask(batch);
    batch.forEach((c) => pending.set(key(c), p));
    return p.finally(() => batch.forEach((c) => pending.delete(key(c))));
  });
}

/** useCan answers permission checks, one Allowed per check, in order. */
export function useCan(checks: Check[]): Allowed[] {
  const sig = checks.map(key).join('|');
  const [, bump] = useState(0);
  useEffect(() => {
    const l = () => bump((n) => n + 1);
    listeners.add(l);
    request(checks);
    return () => {
      listeners.delete(l);
    };
  }, [sig]);
  return useMemo(() => checks.map((c) => known.get(key(c))), [sig, known.size]);
}

/** appObject is the RBAC object of an application. */
export const appObject = (project: string, name: string) => `${project}/${name}`;
