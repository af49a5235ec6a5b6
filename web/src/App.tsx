import { Component, useEffect, type ErrorInfo, type ReactNode } from 'react';
import { del } from './api/client';
import { Icon } from './components/icons';
import { ErrorMessage, Spinner, ToastProvider } from './components/ui';
import { AppDetail } from './pages/AppDetail';
import { AppList } from './pages/AppList';
import { AppSetDetail } from './pages/AppSetDetail';
import { AppSetList } from './pages/AppSetList';
import { Login } from './pages/Login';
import { Settings } from './pages/Settings';
import { Link, match, navigate, useLocation } from './router';
import { SessionProvider, useSession } from './session';

export function App() {
  return (
    <SessionProvider>
      <ToastProvider>
        <Shell />
      </ToastProvider>
    </SessionProvider>
  );
}

function Shell() {
  const { user, setUser } = useSession();
  const loc = useLocation();
  // Logged out: every page but the login page goes to it, and comes back.
  useEffect(() => {
    if (user === null && loc.path !== '/login') {
      navigate(`/login?return=${encodeURIComponent(loc.path + window.location.search)}`, true);
    }
    if (user && (loc.path === '/login' || loc.path === '/')) navigate('/applications', true);
  }, [user, loc.path]);
  if (user === undefined) {
    return (
      <main id="main" className="page">
        <Spinner />
      </main>
    );
  }
  if (loc.path === '/login') return <Login params={loc.params} />;
  if (!user) return null;
  const logout = async () => {
    try {
      await del('/api/v1/session');
    } finally {
      // A logout starts over; an expired session comes back to its page.
      navigate('/login', true);
      setUser(null);
    }
  };
  const section = loc.path.startsWith('/settings') ? 'settings' : loc.path.startsWith('/applicationsets') ? 'applicationsets' : 'applications';
  return (
    <>
      <a className="skip" href="#main">
        Skip to the content
      </a>
      <header className="topbar">
        <Link to="/applications" className="brand">
          <span className="brand-mark" aria-hidden="true" /> Windlass
        </Link>
        <nav aria-label="Main">
          <Link to="/applications" aria-current={section === 'applications' ? 'page' : undefined}>
            <Icon name="apps" /> Applications
          </Link>
          <Link to="/applicationsets" aria-current={section === 'applicationsets' ? 'page' : undefined}>
            <Icon name="tree" /> Sets
          </Link>
          <Link to="/settings/projects" aria-current={section === 'settings' ? 'page' : undefined}>
            <Icon name="settings" /> Settings
          </Link>
        </nav>
        <div className="spacer" />
        <span className="user" title={user.groups.length ? `groups: ${user.groups.join(', ')}` : undefined}>
          {user.name}
        </span>
        <button type="button" className="btn btn-plain" onClick={logout}>
          <Icon name="logout" /> Log out
        </button>
      </header>
      <ErrorBoundary key={loc.path}>
        <Route path={loc.path} params={loc.params} />
      </ErrorBoundary>
    </>
  );
}

function Route({ path, params }: { path: string; params: URLSearchParams }) {
  if (path === '/applications' || path === '/') return <AppList params={params} />;
  const app = match('/applications/:project/:name', path);
  if (app) return <AppDetail key={`${app.project}/${app.name}`} project={app.project} name={app.name} params={params} />;
  if (path === '/applicationsets') return <AppSetList />;
  const set = match('/applicationsets/:name', path);
  if (set) return <AppSetDetail key={set.name} name={set.name} />;
  const settings = match('/settings/:section', path) ?? (path === '/settings' ? { section: 'projects' } : null);
  if (settings) return <Settings section={settings.section} />;
  return (
    <main id="main" className="page">
      <h1>Page not found</h1>
      <p>
        There is no page at <code>{path}</code>. <Link to="/applications">Go to the applications</Link>.
      </p>
    </main>
  );
}

/** ErrorBoundary shows a crash of a page as a message, never a blank page. */
class ErrorBoundary extends Component<{ children: ReactNode }, { error: unknown }> {
  state = { error: null as unknown };
  static getDerivedStateFromError(error: unknown) {
    return { error };
  }
  componentDidCatch(error: unknown, info: ErrorInfo) {
    console.error('windlass ui:', error, info.componentStack);
  }
  render() {
    if (this.state.error) {
      return (
        <main id="main" className="page">
          <h1>Something went wrong</h1>
          <ErrorMessage error={this.state.error} what="This page failed" />
          <button type="button" className="btn" onClick={() => this.setState({ error: null })}>
            Try again
          </button>
        </main>
      );
    }
    return this.props.children;
  }
}
