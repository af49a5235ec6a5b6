// What the UI shows, whole (run by TestBrowserLayout): tree nodes with
// long names and statuses, a resource's events, and the list's last sync
// when it failed. A failed check does not stop the later ones; the script
// exits non-zero when any failed.
import path from 'node:path';
import { api, base, check, env, failed, launch, login, newPage, screenshot as shoot, shots, step } from './lib.mjs';

const adminPassword = env('WINDLASS_ADMIN_PASSWORD');
const repo = env('WINDLASS_REPO');
const app = env('WINDLASS_APP');
const broken = `${app}-broken`;
const excluded = `${app}-excluded`;
const namespace = env('WINDLASS_APP_NAMESPACE');
const deployment = env('WINDLASS_DEPLOYMENT');
const configMap = env('WINDLASS_CONFIGMAP');
const control = env('WINDLASS_CONTROL');

const browser = await launch();
const { page, errors: pageErrors } = await newPage(browser);
const tree = page.getByRole('group', { name: 'Resource tree' });
const header = () => page.locator('.app-head .app-title');
const screenshot = (name) => shoot(page, name);

/** cutInTree lists the names and badges of the tree that do not show whole. */
function cutInTree() {
  return page.evaluate(() => {
    const out = [];
    for (const node of document.querySelectorAll('.tree .tree-node')) {
      const box = node.getBoundingClientRect();
      const right = box.right - parseFloat(getComputedStyle(node).borderRightWidth);
      for (const part of node.querySelectorAll('.node-name, .badge')) {
        const r = part.getBoundingClientRect();
        if (part.scrollWidth > part.clientWidth || r.right > right + 0.5) {
          out.push(`"${part.textContent}" in ${node.dataset.kind ?? 'app'} ${node.dataset.name ?? node.querySelector('.node-name')?.textContent} (${Math.round(r.right - box.left)} px in a ${Math.round(box.width)} px node)`);
        }
      }
    }
    return out;
  });
}

async function treeShowsWhole(what) {
  const cut = await cutInTree();
  check(cut.length === 0, `${what}: the tree cuts ${cut.join('; ')}`);
}

// verify runs a check whose failure the next steps can do without.
const failures = [];
async function verify(name, fn) {
  await step(name, fn).catch(async () => {
    failures.push(name);
    const shot = path.join(shots, `failure-${failures.length}.png`);
    await page.screenshot({ path: shot }).catch(() => undefined);
    console.log(`     screenshot: ${shot}`);
  });
}

try {
  let token;
  await step('log in; create an app with long names, and one that cannot sync', async () => {
    await page.goto('/login');
    await login(page, 'admin', adminPassword);
    await page.waitForURL(/\/applications$/);
    ({ token } = await api('POST', '/api/v1/session', undefined, { username: 'admin', password: adminPassword }));
    for (const [name, p] of [[app, 'long'], [broken, 'broken'], [excluded, 'excluded']]) {
      await api('POST', '/api/v1/applications', token, {
        name,
        project: 'default',
        source: { repoURL: repo, path: p, targetRevision: 'main' },
        destination: { namespace },
        syncPolicy: { syncOptions: ['CreateNamespace=true'] },
      });
    }
  });

  await step('the tree shows the resources, OutOfSync and Missing', async () => {
    await page.goto(`/applications/default/${app}`);
    await header().getByTitle('Sync status: OutOfSync', { exact: true }).waitFor({ timeout: 60_000 });
    await tree.locator(`[data-name="${configMap}"]`).getByTitle('Health: Missing', { exact: true }).waitFor();
    await tree.locator(`[data-name="${deployment}"]`).waitFor();
    await screenshot('ui-tree-long-missing.png');
  });
  await verify('the tree shows long names and OutOfSync / Missing whole', () => treeShowsWhole('before the sync'));

  await step('sync, then a rollout that cannot finish: Progressing', async () => {
    await api('POST', `/api/v1/applications/${app}/sync`, token, {});
    // A request no node can hold: the new ReplicaSet's Pod stays Pending.
    const patch = { spec: { template: { spec: { containers: [{ name: 'worker', resources: { requests: { cpu: '1000' } } }] } } } };
    const res = await fetch(control + '/patch', { method: 'POST', body: JSON.stringify({ Namespace: namespace, Name: deployment, Patch: patch }) });
    check(res.ok, `patch: ${res.status} ${await res.text()}`);
    const node = tree.locator(`[data-name="${deployment}"]`);
    await node.getByTitle('Health: Progressing', { exact: true }).waitFor({ timeout: 60_000 });
    await node.getByTitle('Sync status: OutOfSync', { exact: true }).waitFor({ timeout: 60_000 });
    await page.waitForFunction(() => document.querySelectorAll('.tree [data-kind="ReplicaSet"]').length >= 2, null, { timeout: 30_000 });
    await screenshot('ui-tree-long-progressing.png');
  });
  await verify('the tree shows long names, OutOfSync and Progressing whole', () => treeShowsWhole('during the rollout'));

  await verify('the resource panel\'s events are not a word per line', async () => {
    await tree.locator(`[data-name="${deployment}"]`).click();
    const panel = page.getByRole('complementary', { name: deployment });
    await panel.getByRole('tab', { name: 'Events' }).click();
    const cells = panel.locator('table td.msg');
    // Events may come a refresh later: reopen the tab until they do.
    for (const until = Date.now() + 30_000; (await cells.count()) < 2; ) {
      check(Date.now() < until, 'no events for the Deployment');
      await panel.getByRole('tab', { name: 'Summary' }).click();
      await page.waitForTimeout(500);
      await panel.getByRole('tab', { name: 'Events' }).click();
      await panel.getByRole('tabpanel').waitFor();
    }
    await screenshot('ui-resource-events.png');
    const squeezed = await cells.evaluateAll((tds) =>
      tds.flatMap((td) => {
        const range = document.createRange();
        range.selectNodeContents(td);
        const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
        const words = td.textContent.trim().split(/\s+/).length;
        const em = parseFloat(getComputedStyle(td).fontSize);
        return words >= 4 && (lines >= words || td.clientWidth < 12 * em) ? [`"${td.textContent}": ${lines} lines for ${words} words, ${td.clientWidth} px wide`] : [];
      }),
    );
    check(squeezed.length === 0, `event messages squeezed: ${squeezed.join('; ')}`);
    await page.keyboard.press('Escape');
  });

  await step('a sync of the broken app fails', async () => {
    const res = await fetch(`${base}/api/v1/applications/${broken}/sync`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
      body: '{}',
    });
    const result = await res.json();
    check(result.phase === 'Failed', `the broken app's sync: ${res.status} ${JSON.stringify(result)}`);
  });
  await verify('the list marks the app whose last sync failed', async () => {
    await page.goto('/applications');
    const mark = page.locator(`tr[data-app="default/${broken}"]`).getByTitle('Last sync: Failed', { exact: true });
    await mark.waitFor({ timeout: 30_000 });
    check(await mark.isVisible(), 'the failed sync is not visible');
    await page.locator(`tr[data-app="default/${app}"]`).getByTitle('Last sync: Succeeded', { exact: true }).waitFor();
    await screenshot('ui-list-failed-sync.png');
  });

  await verify('the app page shows its conditions: the excluded kind, with why', async () => {
    await page.goto(`/applications/default/${excluded}`);
    const notice = page.getByRole('status', { name: 'Conditions' });
    await notice.waitFor({ timeout: 60_000 });
    const item = notice.locator('[data-condition="ExcludedResourceWarning"]');
    await item.waitFor();
    const text = await item.textContent();
    check(/PodDisruptionBudget .*\/worker is not applied/.test(text), `the condition says ${text}`);
    check((await notice.locator('.conditions-summary').textContent()).startsWith('1 warning'), 'the notice does not count one warning');
    await screenshot('ui-conditions.png');
  });

  await step('all', async () => {
    check(pageErrors.length === 0, `errors in the page: ${pageErrors.join('; ')}`);
    check(failures.length === 0, `failed: ${failures.join('; ')}`);
  });
} catch {
  await failed(page);
} finally {
  await browser.close();
}
