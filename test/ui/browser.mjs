// The web UI in a real browser (run by TestBrowser, which sets the
// environment): playwright-core from web/node_modules drives Debian's
// chromium through the UI's main paths. It exits non-zero on the first
// failure, with the step and the reason.
import { api, check, env, failed, launch, login as loginAs, newPage, screenshot as shoot, step } from './lib.mjs';

const adminPassword = env('WINDLASS_ADMIN_PASSWORD');
const [viewer, viewerPassword] = env('WINDLASS_VIEWER').split(':');
const repo = env('WINDLASS_REPO');
const commitMessage = env('WINDLASS_COMMIT_MESSAGE');
const app = env('WINDLASS_APP');
const namespace = env('WINDLASS_APP_NAMESPACE');
const control = env('WINDLASS_CONTROL');
const notifyConfig = env('WINDLASS_NOTIFY_CONFIG');
const notifySecret = env('WINDLASS_NOTIFY_SECRET');

const started = Date.now();
const browser = await launch();
const { page, external, errors: pageErrors } = await newPage(browser);

const header = () => page.locator('.app-head .app-title');
async function waitStatus(sync, health, timeout = 60_000) {
  await header().getByTitle(`Sync status: ${sync}`, { exact: true }).waitFor({ timeout });
  if (health) await header().getByTitle(`Health: ${health}`, { exact: true }).waitFor({ timeout });
}
async function syncThroughDialog(shot) {
  await page.getByRole('toolbar', { name: 'Application actions' }).getByRole('button', { name: 'Sync', exact: true }).click();
  const dialog = page.getByRole('dialog', { name: `Sync ${app}` });
  await dialog.waitFor();
  if (shot) await screenshot(shot);
  await dialog.getByRole('button', { name: 'Synchronize' }).click();
  await dialog.waitFor({ state: 'hidden' });
}
const login = (user, password) => loginAs(page, user, password);
const tree = page.getByRole('group', { name: 'Resource tree' });
const screenshot = (name) => shoot(page, name);

try {
  await step('1 log in (a wrong password first)', async () => {
    await page.goto('/applications');
    await page.waitForURL(/\/login\?return=%2Fapplications/);
    await login('admin', 'not-the-password');
    await page.getByRole('alert').filter({ hasText: 'wrong username or password' }).waitFor();
    await screenshot('ui-login.png');
    await login('admin', adminPassword);
    await page.waitForURL(/\/applications$/);
    await page.getByRole('heading', { name: 'Applications', exact: true }).waitFor();
  });

  await step('2 an app created through the API appears in the list live', async () => {
    await page.locator('.live-live').waitFor();
    await page.evaluate(() => {
      window.__sameDocument = true;
    });
    const { token } = await api('POST', '/api/v1/session', undefined, { username: 'admin', password: adminPassword });
    // Notifications: on-deployed goes to a receiver that takes it and to one that refuses it.
    await api('PUT', '/api/v1/settings/notifications', token, { config: notifyConfig });
    await api('POST', '/api/v1/applications', token, {
      name: app,
      annotations: {
        'notifications.argoproj.io/subscribe.on-deployed.hook': '',
        'notifications.argoproj.io/subscribe.on-deployed.down': '',
      },
      project: 'default',
      source: { repoURL: repo, path: 'guestbook', targetRevision: 'main' },
      destination: { namespace },
      syncPolicy: { syncOptions: ['CreateNamespace=true'] },
    });
    await page.locator(`tr[data-app="default/${app}"]`).waitFor({ timeout: 30_000 });
    check(await page.evaluate(() => window.__sameDocument === true), 'the list page reloaded');
  });

  await step('3 open the app, sync it, see Deployment → ReplicaSet → Pods', async () => {
    await page.getByRole('link', { name: app, exact: true }).click();
    await page.getByRole('heading', { name: app, exact: true }).waitFor();
    await waitStatus('OutOfSync');
    // The header shows the commit's subject next to its SHA.
    await page.locator('.app-head .summary .commit-msg').filter({ hasText: commitMessage }).waitFor();
    await syncThroughDialog();
    await waitStatus('Synced', 'Healthy');
    await tree.locator('[data-kind="Deployment"]').waitFor();
    await tree.locator('[data-kind="ReplicaSet"]').waitFor({ timeout: 30_000 });
    await page.waitForFunction(() => document.querySelectorAll('.tree [data-kind="Pod"]').length >= 2, null, { timeout: 30_000 });
    const edges = await page.locator('.tree-edges path').count();
    const nodes = await tree.locator('.tree-node').count();
    // Every node but the application has an edge from its owner.
    check(edges >= nodes - 1, `${edges} edges for ${nodes} nodes: the graph is not linked`);
    await screenshot('ui-tree.png');
    await page.emulateMedia({ colorScheme: 'dark' });
    await screenshot('ui-tree-dark.png');
    await page.emulateMedia({ colorScheme: 'light' });
  });

  await step('4 a live edit makes it OutOfSync, and the diff shows it', async () => {
    const res = await fetch(control + '/scale', { method: 'POST', body: JSON.stringify({ Namespace: namespace, Name: 'guestbook-ui', Replicas: 5 }) });
    check(res.ok, `scale: ${res.status} ${await res.text()}`);
    await waitStatus('OutOfSync', undefined, 60_000);
    // By keyboard: the tree's nodes are buttons.
    await tree.locator('[data-kind="Deployment"]').focus();
    await page.keyboard.press('Enter');
    const panel = page.getByRole('complementary', { name: 'guestbook-ui' });
    await panel.getByRole('tab', { name: 'Diff', selected: true }).waitFor();
    const changed = panel.locator('.diff-table tr.diff-change, .diff-table tr.diff-del, .diff-table tr.diff-ins');
    await changed.first().waitFor();
    const texts = await changed.allTextContents();
    check(texts.some((t) => t.includes('replicas: 5')) && texts.some((t) => t.includes('replicas: 2')), `the diff does not show replicas 5 → 2: ${texts.join(' | ')}`);
    check(texts.length <= 3, `the diff shows ${texts.length} changed lines for one changed field: ${texts.join(' | ')}`);
    await screenshot('ui-diff.png');
    await panel.getByRole('tab', { name: 'Live manifest' }).click();
    await panel.locator('pre').filter({ hasText: 'replicas: 5' }).waitFor();
    await panel.getByRole('tab', { name: 'Events' }).click();
    await panel.getByRole('tabpanel').waitFor();
    await page.keyboard.press('Escape');
    await panel.waitFor({ state: 'hidden' });
  });

  await step('5 Sync, watching the progress until Synced and Healthy', async () => {
    await syncThroughDialog('ui-sync-dialog.png');
    const seen = new Set();
    const deadline = Date.now() + 90_000;
    for (;;) {
      const op = await page.locator('.operation').first().textContent().catch(() => '');
      if (op) seen.add(op.replace(/\s+/g, ' ').slice(0, 90));
      const done = await page.locator('.operation-done').filter({ hasText: `Last sync #2` }).count();
      const synced = await header().getByTitle('Sync status: Synced', { exact: true }).count();
      const healthy = await header().getByTitle('Health: Healthy', { exact: true }).count();
      if (done && synced && healthy) break;
      check(Date.now() < deadline, `no Synced and Healthy after the sync; seen: ${[...seen].join(' / ')}`);
      await page.waitForTimeout(100);
    }
    console.log(`     progress seen: ${[...seen].join(' / ')}`);
    await page.locator('.operation-done').getByTitle('Last sync: Succeeded').waitFor();
  });

  await step('5b run the scale action from the resource panel', async () => {
    await page.getByRole('tab', { name: 'Tree' }).click();
    await tree.locator('[data-kind="Deployment"]').click();
    const panel = page.getByRole('complementary', { name: 'guestbook-ui' });
    await panel.getByRole('tab', { name: 'Actions' }).click();
    const menu = panel.getByRole('menu', { name: 'Actions of guestbook-ui' });
    await menu.getByRole('menuitem', { name: 'restart' }).waitFor();
    await menu.getByRole('menuitem', { name: 'scale…' }).click();
    const form = panel.getByRole('form', { name: 'Run scale' });
    // The same count as Git's, so that the app stays Synced.
    await form.getByLabel('replicas').fill('2');
    await screenshot('ui-actions.png');
    await form.getByRole('button', { name: 'Run scale' }).click();
    await panel.getByRole('status').filter({ hasText: 'scale changed:' }).waitFor();
    await screenshot('ui-actions-result.png');
    await panel.getByRole('button', { name: 'Close the resource panel' }).click();
    await panel.waitFor({ state: 'hidden' });
  });

  await step('5c edit the spec as YAML: a refusal shows the problem, then a save', async () => {
    await page.getByRole('tab', { name: 'Spec' }).click();
    await page.getByRole('button', { name: 'Edit spec' }).click();
    const form = page.getByRole('form', { name: 'Edit the spec' });
    const yaml = form.getByLabel('The spec as YAML');
    const text = await yaml.inputValue();
    check(text.includes(`name: ${app}`), `the spec does not name the app: ${text.slice(0, 200)}`);
    await yaml.fill(text.replace(/^name: .*$/m, 'name: another-name'));
    await form.getByRole('button', { name: 'Save' }).click();
    await form.getByRole('alert').filter({ hasText: 'The spec was not saved' }).waitFor();
    await screenshot('ui-spec-error.png');
    await yaml.fill(text.trimEnd() + '\nlabels:\n  team: web\n');
    await form.getByLabel('Show the change').check();
    await form.locator('.diff-table tr.diff-ins').first().waitFor();
    await screenshot('ui-spec-edit.png');
    await form.getByRole('button', { name: 'Save' }).click();
    await form.waitFor({ state: 'hidden' });
    await page.locator('.app-head .label-chip', { hasText: 'team=web' }).waitFor();
  });

  await step('5d set directory options in Parameters, previewing the spec change', async () => {
    await page.getByRole('tab', { name: 'Parameters' }).click();
    const form = page.getByRole('form', { name: 'Parameters' });
    await form.getByLabel('Tool').selectOption('directory');
    await form.getByLabel('Exclude').fill('README*');
    const preview = form.getByRole('region', { name: 'The change of the spec' });
    const added = await preview.locator('.diff-table tr.diff-ins, .diff-table tr.diff-change').allTextContents();
    check(added.some((t) => t.includes('exclude: README*')), `the preview does not show the exclude: ${added.join(' | ')}`);
    await screenshot('ui-params.png');
    await form.getByRole('button', { name: 'Save' }).click();
    // Saved, the options choose the tool: the form shows it as detected.
    await form.getByText('Tool: Directory').waitFor();
    check((await form.getByLabel('Exclude').inputValue()) === 'README*', 'the saved exclude is not shown');
    await waitStatus('Synced', 'Healthy');
  });

  await step('5e a Pod\'s live manifest, and the Deployment\'s logs: follow, search, pause, download', async () => {
    const res = await fetch(control + '/logs', { method: 'POST', body: JSON.stringify({ Namespace: namespace, Lines: ['starting', 'GET /healthz 200', 'GET / 500'] }) });
    const noLogs = res.status === 501 ? await res.text() : '';
    check(res.ok || noLogs, `logs: ${res.status} ${await res.text()}`);
    await page.getByRole('tab', { name: 'Tree' }).click();
    await tree.locator('[data-kind="Pod"]').first().click();
    const pod = page.getByRole('complementary').filter({ has: page.getByText('Pod', { exact: true }) });
    await pod.getByRole('tab', { name: 'Live manifest' }).click();
    await pod.locator('pre').filter({ hasText: 'kind: Pod' }).waitFor();
    await pod.getByRole('button', { name: 'Close the resource panel' }).click();
    if (noLogs) {
      console.log(`     logs skipped: ${noLogs.trim()}`);
      return;
    }

    await tree.locator('[data-kind="Deployment"]').click();
    const panel = page.getByRole('complementary', { name: 'guestbook-ui' });
    await panel.getByRole('tab', { name: 'Logs' }).click();
    const log = panel.getByLabel('Logs of guestbook-ui');
    await log.getByText('GET / 500').first().waitFor();
    await panel.getByRole('status').filter({ hasText: 'following' }).waitFor();
    // A new line arrives while following.
    const more = await fetch(control + '/logs/append', { method: 'POST', body: JSON.stringify({ Lines: ['a new request'] }) });
    check(more.ok, `logs/append: ${more.status}`);
    await log.getByText('a new request').first().waitFor();
    await panel.getByRole('button', { name: 'Pause' }).click();
    await fetch(control + '/logs/append', { method: 'POST', body: JSON.stringify({ Lines: ['held while paused'] }) });
    await panel.getByRole('status').filter({ hasText: /paused, [1-9]\d* new held back/ }).waitFor();
    check((await log.getByText('held while paused').count()) === 0, 'a line shows while paused');
    await panel.getByLabel('Search the log').fill('500');
    await panel.getByRole('status').filter({ hasText: 'matching' }).waitFor();
    const shown = await log.locator('.log-line').allTextContents();
    check(shown.length > 0 && shown.every((l) => l.includes('500')), `the search shows other lines: ${shown.join(' | ')}`);
    await screenshot('ui-logs.png');
    await panel.getByRole('button', { name: 'Resume' }).click();
    await panel.getByLabel('Search the log').fill('');
    await log.getByText('held while paused').first().waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), panel.getByRole('button', { name: 'Download' }).click()]);
    check(download.suggestedFilename() === 'guestbook-ui.log', `the download is named ${download.suggestedFilename()}`);
    await panel.getByRole('button', { name: 'Close the resource panel' }).click();
  });

  await step('6 the history rolls back to the first sync', async () => {
    await page.getByRole('tab', { name: 'History' }).click();
    const first = page.locator(`tr[data-sync="sync/default/${app}/1"]`);
    await first.waitFor();
    // The rows show at once from what the app keeps; their Temporal UI
    // links come with the list from visibility, a request later.
    await page.locator('tr[data-sync] a', { hasText: 'Workflow' }).nth(1).waitFor({ timeout: 10_000 });
    await first.getByRole('button', { name: 'Rollback to this' }).click();
    const dialog = page.getByRole('dialog', { name: `Roll ${app} back` });
    await dialog.getByRole('button', { name: 'Roll back' }).click();
    await dialog.waitFor({ state: 'hidden' });
    const third = page.locator(`tr[data-sync="sync/default/${app}/3"]`);
    await third.getByTitle('Result: Succeeded').waitFor({ timeout: 60_000 });
    check((await third.textContent()).includes('admin'), 'the rollback does not name its initiator');
    await screenshot('ui-history.png');
  });

  await step('6b the health timeline shows the app becoming Healthy', async () => {
    await page.getByRole('tab', { name: 'Health' }).click();
    const rows = page.locator('table.health-timeline tbody tr');
    // The app's own rows: first seen, then Healthy once its pods ran.
    const appRows = rows.filter({ has: page.locator('strong', { hasText: 'Application' }) });
    await appRows.first().waitFor();
    await appRows.filter({ has: page.locator('td:nth-child(4) [title="Health: Healthy"]') }).first().waitFor();
    const deploy = rows.filter({ hasText: 'guestbook-ui' }).filter({ hasText: 'Deployment' });
    await deploy.first().waitFor();
    check((await rows.count()) >= 2, `the timeline shows ${await rows.count()} rows`);
    await page.getByRole('checkbox', { name: 'Application only' }).check();
    check((await rows.filter({ hasText: 'Deployment' }).count()) === 0, 'Application only still shows resources');
    await page.getByRole('checkbox', { name: 'Application only' }).uncheck();
    await screenshot('ui-health.png');
  });

  await step('6c the notifications tab shows one message sent and one refused', async () => {
    await page.getByRole('tab', { name: 'Notifications' }).click();
    const rows = (result) => page.locator(`table.notifications tbody tr[data-trigger="on-deployed"][data-result="${result}"]`);
    const sent = rows('Sent').filter({ hasText: 'hook' });
    const refused = rows('Failed').filter({ hasText: 'down' });
    await sent.first().waitFor({ timeout: 60_000 });
    await refused.first().waitFor({ timeout: 60_000 });
    const why = await refused.first().textContent();
    check(why.includes('400 Bad Request') && why.includes('receiver told to fail'), `the refused row says ${why}`);
    check((await sent.first().locator('td:nth-child(6)').textContent()) === '1', 'the sent row does not show 1 attempt');
    await screenshot('ui-notifications.png');
  });

  await step('6d the settings page shows the notifications configuration, no credential', async () => {
    await page.goto('/settings/notifications');
    const services = page.locator('table.notification-services tbody tr');
    await services.filter({ has: page.locator('td:first-child', { hasText: /^hook$/ }) }).filter({ hasText: 'webhook' }).waitFor();
    check((await services.count()) === 2, `${await services.count()} services listed, want 2`);
    await page.getByText('Configuration', { exact: true }).click();
    await page.locator('pre.notification-config', { hasText: '$hook-token' }).waitFor();
    check(!(await page.content()).includes(notifySecret), 'the settings page shows the webhook token');
    await screenshot('ui-settings-notifications.png');
    await page.goto(`/applications/default/${app}`);
    await waitStatus('Synced', 'Healthy');
  });

  await step('the list, with the app Synced and Healthy', async () => {
    await page.getByRole('link', { name: 'Applications', exact: true }).first().click();
    const row = page.locator(`tr[data-app="default/${app}"]`);
    await row.getByTitle('Sync status: Synced').waitFor();
    await row.getByTitle('Health: Healthy').waitFor();
    // The revision: the short SHA and the commit's subject, whole in its tooltip.
    const msg = row.locator('td.rev .commit-msg');
    await msg.filter({ hasText: commitMessage }).waitFor();
    check((await msg.getAttribute('title'))?.startsWith(commitMessage), 'the commit message has no tooltip with all of it');
    check(!(await row.textContent()).includes('The body is not shown'), 'the list shows the body of the commit message');
    await screenshot('ui-list.png');
  });

  await step('an unknown page is the UI\'s page not found, not an API error', async () => {
    await page.goto('/no/such/page');
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    await page.getByRole('link', { name: 'Applications', exact: true }).first().click();
    await page.getByRole('heading', { name: 'Applications', exact: true }).waitFor();
  });

  await step('7 a read-only user sees no Sync button', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(/\/login/);
    await login(viewer, viewerPassword);
    await page.getByRole('heading', { name: 'Applications', exact: true }).waitFor();
    await page.goto(`/applications/default/${app}`);
    await page.getByRole('heading', { name: app, exact: true }).waitFor();
    await page.getByRole('note').filter({ hasText: 'Read-only' }).waitFor();
    const toolbar = page.getByRole('toolbar', { name: 'Application actions' });
    await toolbar.getByRole('button', { name: 'Refresh', exact: true }).waitFor();
    for (const name of ['Sync', 'Rollback', 'Delete']) {
      check((await toolbar.getByRole('button', { name, exact: true }).count()) === 0, `a read-only user sees the ${name} button`);
    }
    // The resource's actions are listed, but not permitted.
    await tree.locator('[data-kind="Deployment"]').click();
    const panel = page.getByRole('complementary', { name: 'guestbook-ui' });
    await panel.getByRole('tab', { name: 'Actions' }).click();
    const restart = panel.getByRole('menuitem', { name: 'restart' });
    await restart.waitFor();
    for (const until = Date.now() + 10_000; !(await restart.isDisabled()) && Date.now() < until; ) await page.waitForTimeout(100);
    check(((await restart.getAttribute('title')) ?? '').includes('Not permitted: applications, action/apps/Deployment/restart'), 'a read-only user may run restart');
    await panel.getByRole('button', { name: 'Close the resource panel' }).click();
    await page.getByRole('tab', { name: 'History' }).click();
    await page.locator(`tr[data-sync="sync/default/${app}/1"]`).waitFor();
    check((await page.getByRole('button', { name: 'Rollback to this' }).count()) === 0, 'a read-only user sees Rollback to this');
    // Settings: creating a project is disabled, with a tooltip.
    await page.goto('/settings/projects');
    const create = page.getByRole('button', { name: /New project/ });
    await create.waitFor();
    // The caller's permissions arrive after the page renders: wait (up
    // to 10 s) for the button to be disabled.
    let disabled = false;
    for (const until = Date.now() + 10_000; !disabled && Date.now() < until; ) {
      disabled = await create.isDisabled();
      if (!disabled) await page.waitForTimeout(100);
    }
    check(disabled, 'New project is enabled for a read-only user');
    check(((await create.getAttribute('title')) ?? '').includes('Not permitted'), 'New project has no tooltip saying why');
    await page.getByRole('tab', { name: 'RBAC policy' }).click();
    await page.getByRole('heading', { name: 'policy.csv' }).waitFor();
    await screenshot('ui-settings-rbac.png');
  });

  await step('7b an app that depends on it draws the graph, and its sync waits', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(/\/login/);
    await login('admin', adminPassword);
    await page.getByRole('heading', { name: 'Applications', exact: true }).waitFor();
    const { token } = await api('POST', '/api/v1/session', undefined, { username: 'admin', password: adminPassword });
    const dependent = `${app}-web`;
    const missing = `${app}-db`;
    await api('POST', '/api/v1/applications', token, {
      name: dependent,
      project: 'default',
      source: { repoURL: repo, path: 'guestbook', targetRevision: 'main' },
      destination: { namespace: `${namespace}-web` },
      syncPolicy: { syncOptions: ['CreateNamespace=true'] },
      dependsOn: [app, missing],
    });
    await page.goto(`/applications/default/${dependent}`);
    const graph = page.getByRole('group', { name: 'Dependency graph' });
    await graph.locator(`[data-app="default/${app}"]`).getByTitle('Health: Healthy').waitFor({ timeout: 30_000 });
    await graph.locator(`[data-app="default/${missing}"]`).filter({ hasText: 'does not exist' }).waitFor();
    const edges = await page.locator('.depgraph-edges > path').count();
    check(edges === 2, `${edges} edges for an app with two dependencies`);
    // Its sync waits for the dependency that does not exist, and says so.
    await page.getByRole('toolbar', { name: 'Application actions' }).getByRole('button', { name: 'Sync', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: `Sync ${dependent}` });
    await dialog.getByRole('button', { name: 'Synchronize' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page.locator('.dep-waits').filter({ hasText: `${missing} does not exist` }).waitFor({ timeout: 30_000 });
    await graph.locator(`[data-app="default/${missing}"].dep-waited`).waitFor();
    const waits = await page.locator('.dep-waits li').count();
    check(waits === 1, `the sync waits for ${waits} dependencies, not only the missing one`);
    await screenshot('ui-depends.png');
    await page.getByRole('toolbar', { name: 'Application actions' }).getByRole('button', { name: 'Terminate', exact: true }).click();
    await page.getByRole('dialog', { name: 'Terminate the sync' }).getByRole('button', { name: 'Terminate', exact: true }).click();
    await page.locator('.operation-done').filter({ hasText: 'terminated while waiting for dependencies' }).waitFor({ timeout: 30_000 });
    // The dependency's page draws the app that waits for it (its dependent).
    await page.goto(`/applications/default/${app}`);
    await graph.locator(`[data-app="default/${dependent}"]`).waitFor({ timeout: 30_000 });
    const back = await page.locator('.depgraph-edges > path').count();
    check(back === 1, `${back} edges for an app with one dependent`);
    // The graph is live: the dependent goes from it once deleted.
    await api('DELETE', `/api/v1/applications/${dependent}?cascade=orphan`, token);
    await graph.waitFor({ state: 'detached', timeout: 40_000 });
  });

  await step('8 delete the app (background cascade), and it leaves the list', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(/\/login/);
    await login('admin', adminPassword);
    await page.getByRole('heading', { name: 'Applications', exact: true }).waitFor();
    await page.goto(`/applications/default/${app}`);
    await page.getByRole('toolbar', { name: 'Application actions' }).getByRole('button', { name: 'Delete', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: `Delete ${app}` });
    await dialog.getByLabel('Background').check();
    const confirm = dialog.getByRole('button', { name: 'Delete', exact: true });
    check(await confirm.isDisabled(), 'Delete is enabled before the name is typed');
    await dialog.getByLabel(`Type ${app} to confirm`).fill(app);
    await confirm.click();
    await page.waitForURL(/\/applications$/);
    await page.locator(`tr[data-app="default/${app}"]`).waitFor({ state: 'detached', timeout: 60_000 });
  });

  check(pageErrors.length === 0, `errors in the page: ${pageErrors.join('; ')}`);
  check(external.length === 0, `requests left the origin: ${external.join(', ')}`);
  console.log(`ok   all (${((Date.now() - started) / 1000).toFixed(1)} s)`);
} catch {
  await failed(page);
} finally {
  await browser.close();
}
