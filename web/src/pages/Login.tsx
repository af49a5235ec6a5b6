import { useEffect, useState, type FormEvent } from 'react';
import { ApiError, get, post, query } from '../api/client';
import type { SSOConfig } from '../api/types';
import { Button, ErrorMessage } from '../components/ui';
import { navigate } from '../router';
import { useSession } from '../session';

/** returnPath is where to go after logging in: a path of this UI only. */
export function returnPath(params: URLSearchParams): string {
  const r = params.get('return') ?? '';
  return r.startsWith('/') && !r.startsWith('//') && !r.startsWith('/api/') && !r.startsWith('/login') ? r : '/applications';
}

/** ssoLoginURL is where the SSO button goes: the server's login URL, with the return path. */
export function ssoLoginURL(sso: SSOConfig, ret: string): string {
  const url = sso.loginURL?.startsWith('/') ? sso.loginURL : '/api/v1/sso/login';
  return url + (url.includes('?') ? '&' : '') + query({ return: ret }).replace(url.includes('?') ? '?' : '', '');
}

export function Login({ params }: { params: URLSearchParams }) {
  const { reload } = useSession();
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [sso, setSSO] = useState<SSOConfig | null>(null);
  const ssoError = params.get('error');

  useEffect(() => {
    // SSO shows only when the server says it is on; 404 or 501 hide it.
    get<SSOConfig>('/api/v1/sso/config', { quiet401: true }).then(
      (c) => setSSO(c?.enabled ? c : null),
      () => setSSO(null),
    );
  }, []);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await post('/api/v1/session', { username, password }, { quiet401: true });
      await reload();
      navigate(returnPath(params), true);
    } catch (err) {
      setError(err);
      setPassword('');
    } finally {
      setBusy(false);
    }
  };

  let message = error;
  if (error instanceof ApiError && error.status === 401) {
    message = new ApiError(401, { ...error.problem, title: 'Login failed', detail: 'wrong username or password' });
  } else if (error instanceof ApiError && error.status === 429) {
    message = new ApiError(429, { ...error.problem, title: 'Too many failed logins', detail: `${error.problem.detail ?? ''} Wait a minute, then try again.`.trim() });
  }

  return (
    <main id="main" className="login">
      <div className="login-card">
        <h1>
          <span className="brand-mark" aria-hidden="true" /> Windlass
        </h1>
        <p className="muted">GitOps continuous delivery on Temporal</p>
        <form onSubmit={submit} aria-describedby={error ? 'login-error' : undefined}>
          <div className="field">
            <label htmlFor="username">Username</label>
            <input id="username" name="username" autoComplete="username" required value={username} onChange={(e) => setUsername(e.target.value)} autoFocus />
          </div>
          <div className="field">
            <label htmlFor="password">Password</label>
            <input id="password" name="password" type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
          </div>
          <div id="login-error">
            <ErrorMessage error={message} />
            {ssoError && <ErrorMessage error={new ApiError(401, { title: 'SSO login failed', detail: ssoError })} />}
          </div>
          <Button type="submit" variant="primary" disabled={busy} className="btn-block">
            {busy ? 'Logging in…' : 'Log in'}
          </Button>
        </form>
        {sso && (
          <>
            <div className="or" aria-hidden="true">
              or
            </div>
            <a className="btn btn-block" href={ssoLoginURL(sso, returnPath(params))}>
              Log in with SSO{sso.name ? ` (${sso.name})` : ''}
            </a>
          </>
        )}
      </div>
    </main>
  );
}
