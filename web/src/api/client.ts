import type { Problem } from './types';

/** The cookie the server sets at login for the double-submit CSRF check. */
export const CSRF_COOKIE = 'windlass.csrf';
export const CSRF_HEADER = 'X-CSRF-Token';

/** Fired on window when the API answers 401 (the session ended). */
export const UNAUTHENTICATED_EVENT = 'windlass:unauthenticated';

/** The start of the detail of the server's 404 for an unknown API route. */
export const NO_ENDPOINT = 'no such API endpoint';

/** An API error: the RFC 9457 problem the server answered, or a network error. */
export class ApiError extends Error {
  readonly status: number;
  readonly problem: Problem;

  constructor(status: number, problem: Problem) {
    super(formatProblem(status, problem));
    this.name = 'ApiError';
    this.status = status;
    this.problem = problem;
  }

  /** The server does not have this endpoint (yet): 501, or the 404 of an unknown route. */
  get notAvailable(): boolean {
    return this.status === 501 || (this.status === 404 && (this.problem.detail ?? '').startsWith(NO_ENDPOINT));
  }
}

/** formatProblem renders a problem as one readable sentence. */
export function formatProblem(status: number, p: Problem): string {
  const title = p.title || statusText(status);
  let s = status > 0 ? `${status} ${title}` : title;
  if (p.detail) s += `: ${p.detail}`;
  if (p.field) s += ` (field ${p.field})`;
  return s;
}

function statusText(status: number): string {
  switch (status) {
    case 0:
      return 'The server cannot be reached';
    case 400:
      return 'Bad Request';
    case 401:
      return 'Unauthorized';
    case 403:
      return 'Forbidden';
    case 404:
      return 'Not Found';
    case 409:
      return 'Conflict';
    case 429:
      return 'Too Many Requests';
    case 501:
      return 'Not Implemented';
    case 503:
      return 'Service Unavailable';
    default:
      return status >= 500 ? 'Server Error' : 'Error';
  }
}

/** describeError turns anything thrown into a message for people. */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}

export function readCookie(name: string, cookies = typeof document === 'undefined' ? '' : document.cookie): string | undefined {
  for (const part of cookies.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return decodeURIComponent(v.join('='));
  }
  return undefined;
}

const unsafe = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export interface RequestOptions {
  signal?: AbortSignal;
  /** Do not announce a 401 (the login request itself). */
  quiet401?: boolean;
  /** The body's media type (default application/json). */
  contentType?: string;
}

/**
 * request calls the API with the session cookie, adding the CSRF header to
 * unsafe requests, and returns the decoded JSON (undefined for 204).
 * Errors are thrown as ApiError.
 */
export async function request<T>(method: string, path: string, body?: unknown, opts: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json, application/problem+json' };
  let payload: string | undefined;
  if (body !== undefined) {
    headers['Content-Type'] = opts.contentType ?? 'application/json';
    payload = typeof body === 'string' ? body : JSON.stringify(body);
  }
  if (unsafe.has(method)) {
    const token = readCookie(CSRF_COOKIE);
    if (token) headers[CSRF_HEADER] = token;
  }
  let res: Response;
  try {
    res = await fetch(path, { method, headers, body: payload, credentials: 'same-origin', signal: opts.signal });
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') throw e;
    throw new ApiError(0, { detail: `the request failed (${describeError(e)})` });
  }
  const text = await res.text();
  if (!res.ok) {
    if (res.status === 401 && !opts.quiet401) window.dispatchEvent(new Event(UNAUTHENTICATED_EVENT));
    throw new ApiError(res.status, parseProblem(res.status, res.statusText, text));
  }
  if (!text) return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ApiError(res.status, { title: 'Bad answer', detail: `the server did not answer JSON: ${text.slice(0, 200)}` });
  }
}

/** parseProblem reads a problem document, or wraps a non-JSON answer. */
export function parseProblem(status: number, statusText: string, text: string): Problem {
  try {
    const p = JSON.parse(text) as Problem;
    if (p && typeof p === 'object') return { ...p, title: p.title || statusText };
  } catch {
    // not JSON: keep the text
  }
  return { title: statusText, status, detail: text.trim().slice(0, 300) || undefined };
}

export const get = <T>(path: string, opts?: RequestOptions) => request<T>('GET', path, undefined, opts);
export const post = <T>(path: string, body?: unknown, opts?: RequestOptions) => request<T>('POST', path, body, opts);
export const put = <T>(path: string, body?: unknown, opts?: RequestOptions) => request<T>('PUT', path, body, opts);
export const patch = <T>(path: string, body?: unknown, opts?: RequestOptions) => request<T>('PATCH', path, body, opts);
export const del = <T>(path: string) => request<T>('DELETE', path);

/** query builds "?a=1&b=2" from the defined, non-empty values. */
export function query(params: Record<string, string | number | boolean | undefined | null | string[]>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '' || v === false) continue;
    if (Array.isArray(v)) v.forEach((x) => q.append(k, x));
    else q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** appPath is the API path of an application (with ?project=). */
export function appPath(project: string, name: string, sub = '', params: Record<string, string | undefined> = {}): string {
  return `/api/v1/applications/${encodeURIComponent(name)}${sub}${query({ project, ...params })}`;
}
