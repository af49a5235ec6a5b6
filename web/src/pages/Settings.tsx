import { useState, type FormEvent, type ReactNode } from 'react';
import { ApiError, del, get, post, put } from '../api/client';
import type { Account, Check, ClusterView, CustomizationsSource, CustomizationsView, Items, NotificationsView, PolicyView, Project, RepositoryView, TokenInfo, TokenResponse } from '../api/types';
import { Button, Dialog, ErrorMessage, Field, Spinner, TabPanel, Tabs, DialogActions, THead, useAction, useAsync, useToast } from '../components/ui';
import { customizationsBody, originLabel, settingLabel } from '../lib/customizations';
import { dateTime, shortSHA } from '../lib/format';
import { navigate } from '../router';
import { useCan, useSession } from '../session';
import { clusterLabel } from './AppList';

const sections = [
  { id: 'projects', label: 'Projects' },
  { id: 'repositories', label: 'Repositories' },
  { id: 'repocreds', label: 'Credential templates' },
  { id: 'clusters', label: 'Clusters' },
  { id: 'accounts', label: 'Accounts' },
  { id: 'rbac', label: 'RBAC policy' },
  { id: 'customizations', label: 'Health library' },
  { id: 'notifications', label: 'Notifications' },
];

export function Settings({ section }: { section: string }) {
  const active = sections.some((s) => s.id === section) ? section : 'projects';
  return (
    <main id="main" className="page">
      <h1>Settings</h1>
      <Tabs tabs={sections} active={active} onChange={(id) => navigate(`/settings/${id}`)} label="Settings sections" />
      <TabPanel id={active}>
        {active === 'projects' && <Projects />}
        {active === 'repositories' && <Repositories />}
        {active === 'repocreds' && <RepoCreds />}
        {active === 'clusters' && <Clusters />}
        {active === 'accounts' && <Accounts />}
        {active === 'rbac' && <RBAC />}
        {active === 'customizations' && <Customizations />}
        {active === 'notifications' && <Notifications />}
      </TabPanel>
    </main>
  );
}

/** Confirmed runs a deletion after window.confirm, reporting errors as toasts. */
function useRemove(reload: () => void) {
  const toast = useToast();
  return async (what: string, path: string) => {
    if (!window.confirm(`Delete ${what}?`)) return;
    try {
      await del(path);
      toast(`${what} deleted`);
      reload();
    } catch (e) {
      toast(e instanceof Error ? e.message : String(e), true);
    }
  };
}

/** useSave makes a form's submit handler: save, then say so, reload the list and close. */
function useSave(save: () => Promise<unknown>, done: string, onSaved: () => void, onClose: () => void) {
  const { error, busy, run } = useAction();
  const toast = useToast();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    run(async () => {
      await save();
      toast(done);
      onSaved();
      onClose();
    });
  };
  return { error, busy, submit };
}

/** ListTable shows a loaded list as a table, or its loading state or error. */
function ListTable<T>({
  list,
  what,
  cols,
  empty,
  row,
}: {
  list: { data?: Items<T>; loading: boolean; error?: unknown };
  what: string;
  cols: string[];
  empty?: string;
  row: (item: T, i: number) => ReactNode;
}) {
  return (
    <>
      <Loading loading={list.loading && !list.data} error={list.error} what={what} />
      {list.data && (
        <div className="table-wrap">
          <table className="table">
            <THead cols={cols} actions />
            <tbody>{list.data.items.map(row)}</tbody>
          </table>
          {empty && list.data.items.length === 0 && <p className="empty">{empty}</p>}
        </div>
      )}
    </>
  );
}

function Loading({ loading, error, what }: { loading: boolean; error: unknown; what: string }) {
  if (error) return <ErrorMessage error={error} what={`${what} could not be loaded`} />;
  return loading ? <Spinner /> : null;
}

function SectionHead({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="section-head">
      <h2>{title}</h2>
      <div className="spacer" />
      {children}
    </div>
  );
}

function Projects() {
  const list = useAsync((signal) => get<Items<Project>>('/api/v1/projects', { signal }), []);
  const [editing, setEditing] = useState<Project | 'new' | null>(null);
  const [canCreate] = useCan([{ resource: 'projects', action: 'create', object: '*' }]);
  const names = list.data?.items.map((p) => p.name) ?? [];
  const perms = useCan(names.flatMap((n): Check[] => [
    { resource: 'projects', action: 'update', object: n },
    { resource: 'projects', action: 'delete', object: n },
  ]));
  const remove = useRemove(list.reload);
  return (
    <section>
      <SectionHead title="Projects">
        <Button icon="plus" allowed={canCreate} denied="projects, create" onClick={() => setEditing('new')}>
          New project
        </Button>
      </SectionHead>
      <ListTable
        list={list}
        what="The projects"
        cols={['Name', 'Description', 'Source repositories', 'Destinations', 'Roles']}
        row={(p, i) => (
          <tr key={p.name}>
            <td>{p.name}</td>
            <td>{p.description}</td>
            <td className="wrap">{(p.sourceRepos ?? []).join(', ')}</td>
            <td className="wrap">{(p.destinations ?? []).map((d) => `${clusterLabel(d.server) || '*'} / ${d.namespace || '*'}`).join(', ')}</td>
            <td>{(p.roles ?? []).map((r) => r.name).join(', ')}</td>
            <td className="row-actions">
              <Button allowed={perms[2 * i]} denied={`projects, update, ${p.name}`} onClick={() => setEditing(p)}>
                Edit
              </Button>
              <Button variant="danger" allowed={perms[2 * i + 1]} denied={`projects, delete, ${p.name}`} disabled={p.name === 'default'} title={p.name === 'default' ? 'The default project always exists' : undefined} onClick={() => remove(`project ${p.name}`, `/api/v1/projects/${encodeURIComponent(p.name)}`)}>
                Delete
              </Button>
            </td>
          </tr>
        )}
      />
      {editing && <ProjectEditor project={editing === 'new' ? null : editing} onClose={() => setEditing(null)} onSaved={list.reload} />}
    </section>
  );
}

function ProjectEditor({ project, onClose, onSaved }: { project: Project | null; onClose: () => void; onSaved: () => void }) {
  const [text, setText] = useState(JSON.stringify(project ?? { name: '', description: '', sourceRepos: ['*'], destinations: [{ server: '*', namespace: '*' }] }, null, 2));
  const { error, busy, submit } = useSave(
    () => (project ? put(`/api/v1/projects/${encodeURIComponent(project.name)}`, text) : post('/api/v1/projects', text)),
    'Project saved',
    onSaved,
    onClose,
  );
  return (
    <Dialog title={project ? `Edit project ${project.name}` : 'New project'} open onClose={onClose} wide>
      <form onSubmit={submit}>
        <Field id="project-json" label="Project (Windlass JSON or YAML, or an Argo CD AppProject)">
          <textarea id="project-json" className="code" rows={16} value={text} onChange={(e) => setText(e.target.value)} spellCheck={false} />
        </Field>
        <ErrorMessage error={error} what="Not saved" />
        <DialogActions onCancel={onClose} label="Save" busy={busy} />
      </form>
    </Dialog>
  );
}

function Secret({ has }: { has: boolean }) {
  return has ? <span className="flag flag-on">set</span> : <span className="muted">—</span>;
}

function Repositories() {
  const list = useAsync((signal) => get<Items<RepositoryView>>('/api/v1/repositories', { signal }), []);
  const [adding, setAdding] = useState(false);
  const [canCreate] = useCan([{ resource: 'repositories', action: 'create', object: '*' }]);
  const urls = list.data?.items.map((r) => r.url) ?? [];
  const canDelete = useCan(urls.map((u) => ({ resource: 'repositories', action: 'delete', object: u })));
  const remove = useRemove(list.reload);
  return (
    <section>
      <SectionHead title="Repositories">
        <Button icon="plus" allowed={canCreate} denied="repositories, create" onClick={() => setAdding(true)}>
          Connect a repository
        </Button>
      </SectionHead>
      <p className="muted">Credentials are write-only: the server keeps them in its secret store and never shows them again. A repository with a project serves only that project's apps.</p>
      <ListTable
        list={list}
        what="The repositories"
        cols={['URL', 'Type', 'Project', 'Username', 'Password', 'Token', 'SSH key', 'TLS']} empty="No repositories registered: public repositories need none."
        row={(r, i) => (
          <tr key={r.url}>
            <td className="wrap">{r.url}</td>
            <td>{r.type || 'git'}</td>
            <td>{r.project}</td>
            <td>{r.username}</td>
            <td>
              <Secret has={r.hasPassword} />
            </td>
            <td>
              <Secret has={r.hasToken} />
            </td>
            <td>
              <Secret has={r.hasSSHKey} />
            </td>
            <td>{tlsSummary(r)}</td>
            <td className="row-actions">
              <Button variant="danger" allowed={canDelete[i]} denied={`repositories, delete, ${r.url}`} onClick={() => remove(`repository ${r.url}`, `/api/v1/repositories/${encodeURIComponent(r.url)}`)}>
                Delete
              </Button>
            </td>
          </tr>
        )}
      />
      {adding && <AddRepository onClose={() => setAdding(false)} onSaved={list.reload} />}
    </section>
  );
}

/** tlsSummary names the GitHub App, TLS and proxy settings a repository has. */
export function tlsSummary(r: RepositoryView): string {
  const parts = [
    r.githubAppID && `GitHub App ${r.githubAppID} installation ${r.githubAppInstallationID}`,
    r.hasClientCert && 'client cert',
    r.hasCA && 'CA',
    r.insecure && 'insecure',
    r.proxy && `proxy ${r.proxy}`,
    r.passCredentials && 'pass credentials',
  ];
  return parts.filter(Boolean).join(', ') || '—';
}

function RepoCreds() {
  const list = useAsync((signal) => get<Items<RepositoryView>>('/api/v1/repocreds', { signal }), []);
  const [adding, setAdding] = useState(false);
  const [canCreate] = useCan([{ resource: 'repositories', action: 'create', object: '*' }]);
  const urls = list.data?.items.map((r) => r.url) ?? [];
  const canDelete = useCan(urls.map((u) => ({ resource: 'repositories', action: 'delete', object: u })));
  const remove = useRemove(list.reload);
  return (
    <section>
      <SectionHead title="Credential templates">
        <Button icon="plus" allowed={canCreate} denied="repositories, create" onClick={() => setAdding(true)}>
          Add a credential template
        </Button>
      </SectionHead>
      <p className="muted">Every repository whose URL starts with a template's prefix uses its credential, unless the repository is registered itself.</p>
      <ListTable
        list={list}
        what="The credential templates"
        cols={['URL prefix', 'Type', 'Username', 'Password', 'Token', 'SSH key', 'TLS']} empty="No credential templates."
        row={(r, i) => (
          <tr key={r.url}>
            <td className="wrap">{r.url}</td>
            <td>{r.type || 'git'}</td>
            <td>{r.username}</td>
            <td>
              <Secret has={r.hasPassword} />
            </td>
            <td>
              <Secret has={r.hasToken} />
            </td>
            <td>
              <Secret has={r.hasSSHKey} />
            </td>
            <td>{tlsSummary(r)}</td>
            <td className="row-actions">
              <Button variant="danger" allowed={canDelete[i]} denied={`repositories, delete, ${r.url}`} onClick={() => remove(`credential template ${r.url}`, `/api/v1/repocreds/${encodeURIComponent(r.url)}`)}>
                Delete
              </Button>
            </td>
          </tr>
        )}
      />
      {adding && <AddRepository template onClose={() => setAdding(false)} onSaved={list.reload} />}
    </section>
  );
}

/** repoRequest is the form as the API takes it: empty fields left out. */
export function repoRequest(f: Record<string, string | boolean>): Record<string, string | boolean> {
  return Object.fromEntries(Object.entries(f).filter(([, v]) => v !== '' && v !== false));
}

function AddRepository({ onClose, onSaved, template }: { onClose: () => void; onSaved: () => void; template?: boolean }) {
  const [f, setF] = useState({
    url: '', type: '', project: '', username: '', password: '', bearerToken: '', sshPrivateKey: '', sshKnownHosts: '',
    tlsClientCertData: '', tlsClientCertKey: '', caData: '', proxy: '', noProxy: '', insecure: false, passCredentials: false,
  });
  const set = (k: keyof typeof f) => (e: { target: { value: string } }) => setF({ ...f, [k]: e.target.value });
  const flag = (k: 'insecure' | 'passCredentials') => (e: { target: { checked: boolean } }) => setF({ ...f, [k]: e.target.checked });
  const { error, busy, submit } = useSave(
    () => post(template ? '/api/v1/repocreds' : '/api/v1/repositories', repoRequest(f)),
    template ? 'Credential template saved' : 'Repository connected',
    onSaved,
    onClose,
  );
  return (
    <Dialog title={template ? 'Add a credential template' : 'Connect a repository'} open onClose={onClose} wide>
      <form onSubmit={submit} autoComplete="off">
        <Field id="repo-url" label={template ? 'URL prefix' : 'Repository URL'}>
          <input id="repo-url" required value={f.url} onChange={set('url')} placeholder={template ? 'https://git.example.com/team/' : 'https://git.example.com/team/app.git'} />
        </Field>
        <Field id="repo-type" label="Type">
          <select id="repo-type" value={f.type} onChange={set('type')}>
            <option value="">Git</option>
            <option value="helm">Helm chart repository (http(s):// or oci://)</option>
            <option value="oci">OCI source (oci://)</option>
          </select>
        </Field>
        {!template && (
          <Field id="repo-project" label="Project (optional: only its apps may use the repository)">
            <input id="repo-project" value={f.project} onChange={set('project')} />
          </Field>
        )}
        <fieldset>
          <legend>Credential (one of)</legend>
          <Field id="repo-username" label="Username">
            <input id="repo-username" value={f.username} onChange={set('username')} autoComplete="off" />
          </Field>
          <Field id="repo-password" label="Password or access token">
            <input id="repo-password" type="password" value={f.password} onChange={set('password')} autoComplete="new-password" />
          </Field>
          <Field id="repo-token" label="Bearer token">
            <input id="repo-token" type="password" value={f.bearerToken} onChange={set('bearerToken')} autoComplete="new-password" />
          </Field>
          <Field id="repo-ssh" label="SSH private key (PEM)">
            <textarea id="repo-ssh" className="code secret" rows={4} value={f.sshPrivateKey} onChange={set('sshPrivateKey')} spellCheck={false} />
          </Field>
          <Field id="repo-known-hosts" label="SSH known_hosts lines">
            <textarea id="repo-known-hosts" className="code" rows={2} value={f.sshKnownHosts} onChange={set('sshKnownHosts')} spellCheck={false} />
          </Field>
        </fieldset>
        <fieldset>
          <legend>HTTPS (optional)</legend>
          <Field id="repo-cert" label="TLS client certificate (PEM)">
            <textarea id="repo-cert" className="code" rows={3} value={f.tlsClientCertData} onChange={set('tlsClientCertData')} spellCheck={false} />
          </Field>
          <Field id="repo-cert-key" label="TLS client certificate key (PEM)">
            <textarea id="repo-cert-key" className="code secret" rows={3} value={f.tlsClientCertKey} onChange={set('tlsClientCertKey')} spellCheck={false} />
          </Field>
          <Field id="repo-ca" label="CA certificates to trust (PEM)">
            <textarea id="repo-ca" className="code" rows={3} value={f.caData} onChange={set('caData')} spellCheck={false} />
          </Field>
          <Field id="repo-proxy" label="Proxy URL">
            <input id="repo-proxy" value={f.proxy} onChange={set('proxy')} placeholder="http://proxy.example.com:3128" />
          </Field>
          <Field id="repo-no-proxy" label="No proxy for (hosts, .domains, CIDRs)">
            <input id="repo-no-proxy" value={f.noProxy} onChange={set('noProxy')} />
          </Field>
          <label>
            <input type="checkbox" checked={f.insecure} onChange={flag('insecure')} /> Skip the server's certificate check (tests only)
          </label>
          <label>
            <input type="checkbox" checked={f.passCredentials} onChange={flag('passCredentials')} /> Helm: send the credential to chart URLs on other hosts
          </label>
        </fieldset>
        <p className="muted">
          {template ? 'A template is not tested: it names no one repository.' : 'The server tests the connection (ls-remote, or a chart repository\'s index) before it saves the repository.'}
        </p>
        <ErrorMessage error={error} what={template ? 'Not saved' : 'Not connected'} />
        <DialogActions onCancel={onClose} label={template ? 'Save' : 'Connect'} busyLabel={template ? 'Saving…' : 'Testing…'} busy={busy} />
      </form>
    </Dialog>
  );
}

function Clusters() {
  const list = useAsync((signal) => get<Items<ClusterView>>('/api/v1/clusters', { signal }), []);
  const [adding, setAdding] = useState(false);
  const [canCreate] = useCan([{ resource: 'clusters', action: 'create', object: '*' }]);
  const canDelete = useCan((list.data?.items ?? []).map((c) => ({ resource: 'clusters', action: 'delete', object: c.server })));
  const remove = useRemove(list.reload);
  return (
    <section>
      <SectionHead title="Clusters">
        <Button icon="plus" allowed={canCreate} denied="clusters, create" onClick={() => setAdding(true)}>
          Register a cluster
        </Button>
      </SectionHead>
      <ListTable
        list={list}
        what="The clusters"
        cols={['Name', 'Server', 'Credentials', 'TLS', 'Labels']}
        row={(c, i) => (
          <tr key={c.name}>
            <td>{c.name}</td>
            <td className="wrap">{c.server}</td>
            <td>
              <Secret has={c.hasCredentials} />
            </td>
            <td>{c.insecure ? 'not verified' : 'verified'}</td>
            <td className="wrap">
              {Object.entries(c.labels ?? {})
                .sort(([a], [b]) => a.localeCompare(b))
                .map(([k, v]) => `${k}=${v}`)
                .join(', ')}
            </td>
            <td className="row-actions">
              {c.name !== 'in-cluster' && (
                <Button variant="danger" allowed={canDelete[i]} denied={`clusters, delete, ${c.server}`} onClick={() => remove(`cluster ${c.name}`, `/api/v1/clusters/${encodeURIComponent(c.name)}`)}>
                  Delete
                </Button>
              )}
            </td>
          </tr>
        )}
      />
      {adding && <AddCluster onClose={() => setAdding(false)} onSaved={list.reload} />}
    </section>
  );
}

function AddCluster({ onClose, onSaved }: { onClose: () => void; onSaved: () => void }) {
  const [f, setF] = useState({ name: '', server: '', bearerToken: '', caData: '', insecure: false });
  const [labels, setLabels] = useState('');
  const { error, busy, submit } = useSave(
    () =>
      post('/api/v1/clusters', {
        ...Object.fromEntries(Object.entries(f).filter(([, v]) => v !== '' && v !== false)),
        ...(labels.trim() ? { labels: parseLabels(labels) } : {}),
      }),
    'Cluster registered',
    onSaved,
    onClose,
  );
  return (
    <Dialog title="Register a cluster" open onClose={onClose} wide>
      <form onSubmit={submit} autoComplete="off">
        <Field id="cl-name" label="Name">
          <input id="cl-name" required value={f.name} onChange={(e) => setF({ ...f, name: e.target.value })} />
        </Field>
        <Field id="cl-server" label="API server URL">
          <input id="cl-server" required value={f.server} onChange={(e) => setF({ ...f, server: e.target.value })} placeholder="https://10.0.0.1:6443" />
        </Field>
        <Field id="cl-token" label="Bearer token (write-only)">
          <input id="cl-token" type="password" value={f.bearerToken} onChange={(e) => setF({ ...f, bearerToken: e.target.value })} autoComplete="new-password" />
        </Field>
        <Field id="cl-ca" label="CA certificate (PEM)">
          <textarea id="cl-ca" className="code" rows={3} value={f.caData} onChange={(e) => setF({ ...f, caData: e.target.value })} spellCheck={false} />
        </Field>
        <Field id="cl-labels" label="Labels (key=value, comma-separated; ApplicationSet cluster generators select on them)">
          <input id="cl-labels" value={labels} onChange={(e) => setLabels(e.target.value)} placeholder="env=prod, region=eu" />
        </Field>
        <div className="check">
          <input id="cl-insecure" type="checkbox" checked={f.insecure} onChange={(e) => setF({ ...f, insecure: e.target.checked })} />
          <label htmlFor="cl-insecure">Skip TLS verification</label>
        </div>
        <p className="muted">The server connects to the cluster before it saves it.</p>
        <ErrorMessage error={error} what="Not registered" />
        <DialogActions onCancel={onClose} label="Register" busyLabel="Connecting…" busy={busy} />
      </form>
    </Dialog>
  );
}

// parseLabels reads "k=v, k2=v2"; the server validates keys and values.
function parseLabels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(',')) {
    const [k, ...v] = part.trim().split('=');
    if (k) out[k.trim()] = v.join('=').trim();
  }
  return out;
}

function Accounts() {
  const { user } = useSession();
  const list = useAsync((signal) => get<Items<Account>>('/api/v1/accounts', { signal }), []);
  const [tokensOf, setTokensOf] = useState<string | null>(null);
  const [password, setPassword] = useState(false);
  return (
    <section>
      <SectionHead title="Accounts">
        {user?.kind === 'session' && <Button onClick={() => setPassword(true)}>Change my password</Button>}
      </SectionHead>
      <ListTable
        list={list}
        what="The accounts"
        cols={['Name', 'Enabled', 'Capabilities']}
        row={(a) => (
          <tr key={a.name}>
            <td>
              {a.name}
              {a.name === user?.name && <span className="tag">you</span>}
            </td>
            <td>{a.enabled ? 'yes' : 'no'}</td>
            <td>{a.capabilities.join(', ')}</td>
            <td className="row-actions">
              <Button onClick={() => setTokensOf(a.name)}>API tokens</Button>
            </td>
          </tr>
        )}
      />
      {tokensOf && <Tokens account={tokensOf} onClose={() => setTokensOf(null)} />}
      {password && <ChangePassword onClose={() => setPassword(false)} />}
    </section>
  );
}

function Tokens({ account, onClose }: { account: string; onClose: () => void }) {
  const { user } = useSession();
  const path = `/api/v1/accounts/${encodeURIComponent(account)}/tokens`;
  const list = useAsync((signal) => get<Items<TokenInfo>>(path, { signal }), [path]);
  const [canUpdate] = useCan([{ resource: 'accounts', action: 'update', object: account }]);
  const mine = user?.name === account;
  const [created, setCreated] = useState<TokenResponse | null>(null);
  const [f, setF] = useState({ description: '', expiresIn: '720h' });
  const { error, busy, run } = useAction();
  const remove = useRemove(list.reload);
  const create = (e: FormEvent) => {
    e.preventDefault();
    run(async () => {
      setCreated(await post<TokenResponse>(path, f));
      list.reload();
    });
  };
  const allowed = mine || canUpdate;
  return (
    <Dialog title={`API tokens of ${account}`} open onClose={onClose} wide>
      <Loading loading={list.loading && !list.data} error={list.error} what="The tokens" />
      {list.data && list.data.items.length === 0 && <p className="empty">No tokens.</p>}
      {list.data && list.data.items.length > 0 && (
        <table className="table compact">
          <THead cols={['ID', 'Description', 'Issued', 'Expires']} actions />
          <tbody>
            {list.data.items.map((t) => (
              <tr key={t.id}>
                <td>{t.id}</td>
                <td>{t.description}</td>
                <td>{dateTime(t.issuedAt)}</td>
                <td>{t.expiresAt ? dateTime(t.expiresAt) : 'never'}</td>
                <td>
                  <Button variant="danger" allowed={allowed} denied={`accounts, update, ${account}`} onClick={() => remove(`token ${t.id}`, `${path}/${encodeURIComponent(t.id)}`)}>
                    Revoke
                  </Button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {created && (
        <div className="notice" role="status">
          New token <strong>{created.id}</strong>. Copy it now, it is not shown again:
          <pre className="code-block secret">{created.token}</pre>
        </div>
      )}
      {allowed !== false && (
        <form onSubmit={create} className="inline-form">
          <Field id="tok-desc" label="Description">
            <input id="tok-desc" value={f.description} onChange={(e) => setF({ ...f, description: e.target.value })} />
          </Field>
          <Field id="tok-exp" label="Expires in">
            <input id="tok-exp" value={f.expiresIn} onChange={(e) => setF({ ...f, expiresIn: e.target.value })} placeholder="720h" />
          </Field>
          <Button type="submit" variant="primary" disabled={busy}>
            Generate token
          </Button>
        </form>
      )}
      <ErrorMessage error={error} what="No token generated" />
    </Dialog>
  );
}

function ChangePassword({ onClose }: { onClose: () => void }) {
  const [f, setF] = useState({ currentPassword: '', newPassword: '', again: '' });
  const { error, busy, submit } = useSave(
    async () => {
      if (f.newPassword !== f.again) throw new ApiError(400, { title: 'Bad Request', detail: 'the new passwords differ' });
      await put('/api/v1/account/password', { currentPassword: f.currentPassword, newPassword: f.newPassword });
    },
    'Password changed',
    () => undefined,
    onClose,
  );
  return (
    <Dialog title="Change my password" open onClose={onClose}>
      <form onSubmit={submit}>
        <Field id="pw-cur" label="Current password">
          <input id="pw-cur" type="password" required autoComplete="current-password" value={f.currentPassword} onChange={(e) => setF({ ...f, currentPassword: e.target.value })} />
        </Field>
        <Field id="pw-new" label="New password">
          <input id="pw-new" type="password" required autoComplete="new-password" value={f.newPassword} onChange={(e) => setF({ ...f, newPassword: e.target.value })} />
        </Field>
        <Field id="pw-again" label="New password again">
          <input id="pw-again" type="password" required autoComplete="new-password" value={f.again} onChange={(e) => setF({ ...f, again: e.target.value })} />
        </Field>
        <ErrorMessage error={error} what="Not changed" />
        <DialogActions onCancel={onClose} label="Change" busy={busy} />
      </form>
    </Dialog>
  );
}

const matrixResources = ['applications', 'projects', 'repositories', 'clusters', 'accounts', 'logs'];
const matrixActions = ['get', 'create', 'update', 'delete', 'sync', 'rollback'];

function RBAC() {
  const policy = useAsync((signal) => get<PolicyView>('/api/v1/settings/rbac', { signal }), []);
  const checks = matrixResources.flatMap((r) => matrixActions.map((a) => ({ resource: r, action: a, object: r === 'applications' || r === 'logs' ? '*/*' : '*' })));
  const answers = useCan(checks);
  return (
    <section>
      <SectionHead title="RBAC policy" />
      <p className="muted">
        The policy comes from the server's configuration (<code>--auth-config</code>) and the projects' roles; it is read-only here. Argo CD's format: <code>p, subject, resource, action, project/object, allow|deny</code> and <code>g, user-or-group, role</code>.
      </p>
      <h3>What you may do everywhere</h3>
      <table className="table compact matrix">
        <thead>
          <tr>
            <th scope="col">Resource</th>
            {matrixActions.map((a) => (
              <th scope="col" key={a}>
                {a}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {matrixResources.map((r, i) => (
            <tr key={r}>
              <th scope="row">{r}</th>
              {matrixActions.map((a, j) => {
                const v = answers[i * matrixActions.length + j];
                return <td key={a}>{v === undefined ? '?' : v ? '✓ yes' : '✗ no'}</td>;
              })}
            </tr>
          ))}
        </tbody>
      </table>
      <Loading loading={policy.loading && !policy.data} error={policy.error} what="The policy" />
      {policy.data && (
        <>
          <p>
            Default role: <code>{policy.data.defaultRole || 'none'}</code>
          </p>
          <h3>policy.csv</h3>
          <pre className="code-block">{policy.data.policy || '# empty'}</pre>
          <h3>Project roles</h3>
          <pre className="code-block">{policy.data.projects || '# none'}</pre>
          <h3>Built-in</h3>
          <pre className="code-block">{policy.data.builtin}</pre>
        </>
      )}
    </section>
  );
}

function Customizations() {
  const view = useAsync((signal) => get<CustomizationsView>('/api/v1/settings/resource-customizations', { signal }), []);
  const [editing, setEditing] = useState(false);
  const [canUpdate] = useCan([{ resource: 'repositories', action: 'update', object: '*' }]);
  return (
    <section>
      <SectionHead title="Health library">
        <Button icon="edit" allowed={canUpdate} denied="repositories, update, *" disabled={!view.data} onClick={() => setEditing(true)}>
          Set the source
        </Button>
      </SectionHead>
      <p className="muted">
        The Lua health and action scripts each worker loaded: from the Git source set here, or from its own <code>--resource-customizations</code>,{' '}
        <code>--resource-customizations-repo</code> or <code>--argocd-cm</code> flags, which win. Workers read a new source at their next reload, without a
        restart. A worker whose last load failed keeps its last good set.
      </p>
      <Loading loading={view.loading && !view.data} error={view.error} what="The workers' scripts" />
      {view.data && (
        <p>
          Source set here: <code>{settingLabel(view.data.setting)}</code>
        </p>
      )}
      {view.data && view.data.workers.length === 0 && <p>No worker has loaded scripts recently: the built-in health checks apply.</p>}
      {view.data && view.data.workers.length > 0 && (
        <table className="table compact">
          <THead cols={['Worker', 'Source', 'From', 'Revision', 'Loaded', 'Last load']} />
          <tbody>
            {view.data.workers.map((w) => (
              <tr key={w.worker}>
                <td>{w.worker}</td>
                <td>
                  <code>{w.source || 'argocd-cm'}</code>
                </td>
                <td>{originLabel(w)}</td>
                <td>
                  <code>{w.revision ? shortSHA(w.revision) : '—'}</code>
                </td>
                <td>{w.loadedAt ? dateTime(w.loadedAt) : 'never'}</td>
                <td>{w.error ? <span className="error">failed {w.failedAt ? dateTime(w.failedAt) : ''}: {w.error}</span> : 'ok'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {editing && view.data && <EditCustomizations setting={view.data.setting} onClose={() => setEditing(false)} onSaved={view.reload} />}
    </section>
  );
}

function EditCustomizations({ setting, onClose, onSaved }: { setting: CustomizationsSource; onClose: () => void; onSaved: () => void }) {
  const [f, setF] = useState({ repoURL: setting.repoURL, path: setting.path ?? '', revision: setting.revision ?? '' });
  const set = (k: keyof typeof f) => (e: { target: { value: string } }) => setF({ ...f, [k]: e.target.value });
  const { error, busy, submit } = useSave(
    () => put('/api/v1/settings/resource-customizations', customizationsBody(f)),
    f.repoURL.trim() ? 'Health library source set' : 'Health library source cleared',
    onSaved,
    onClose,
  );
  return (
    <Dialog title="Health library source" open onClose={onClose} wide>
      <form onSubmit={submit} autoComplete="off">
        <Field id="cust-repo" label="Repository URL" hint="Empty clears the source. A private repository needs to be registered under Repositories.">
          <input id="cust-repo" value={f.repoURL} onChange={set('repoURL')} placeholder="https://git.example.com/platform/argo-cd.git" />
        </Field>
        <Field id="cust-path" label="Path (optional)">
          <input id="cust-path" value={f.path} onChange={set('path')} placeholder="resource_customizations" />
        </Field>
        <Field id="cust-revision" label="Revision (optional, HEAD by default)">
          <input id="cust-revision" value={f.revision} onChange={set('revision')} placeholder="main" />
        </Field>
        <ErrorMessage error={error} what="Not saved" />
        <DialogActions onCancel={onClose} label="Save" busyLabel="Saving…" busy={busy} />
      </form>
    </Dialog>
  );
}

/** Notifications shows the notifications configuration: its services, triggers and templates, and its text, which holds only $references. */
function Notifications() {
  const view = useAsync((signal) => get<NotificationsView>('/api/v1/settings/notifications', { signal }), []);
  const v = view.data;
  return (
    <section>
      <SectionHead title="Notifications" />
      <p className="muted">
        Saved with <code>PUT /api/v1/settings/notifications</code>, in the <code>argocd-notifications-cm</code> format. A worker started with{' '}
        <code>--notifications-config</code> uses its file instead. Service credentials are <code>$references</code> to the{' '}
        <code>windlass-notifications</code> secret and are never shown.
      </p>
      <Loading loading={view.loading && !v} error={view.error} what="The notifications configuration" />
      {v && v.services.length === 0 && <p className="empty">No notification service is configured.</p>}
      {v && v.services.length > 0 && (
        <table className="table compact notification-services">
          <THead cols={['Service', 'Type']} />
          <tbody>
            {v.services.map((s) => (
              <tr key={s.name}>
                <td>{s.name}</td>
                <td>{s.type}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {v && (
        <>
          <p>
            Triggers: {v.triggers.map((t, i) => <span key={t}>{i > 0 && ', '}<code>{t}</code></span>)}
          </p>
          <p>
            Templates: {v.templates.length === 0 ? 'none' : v.templates.map((t, i) => <span key={t}>{i > 0 && ', '}<code>{t}</code></span>)}
          </p>
          {v.config && (
            <details>
              <summary>Configuration</summary>
              <pre className="notification-config">{v.config}</pre>
            </details>
          )}
        </>
      )}
    </section>
  );
}
