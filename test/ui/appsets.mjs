// The ApplicationSet pages in a real browser (run by TestBrowserAppSets,
// which creates the set WINDLASS_SET of dev, staging and prod and starts
// its rollout, in which staging turns Degraded). It exits non-zero on the
// first failure, with the step and the reason.
import { api, check, env, failed, launch, login, newPage, screenshot as shoot, step } from './lib.mjs';

const adminPassword = env('WINDLASS_ADMIN_PASSWORD');
const [viewer, viewerPassword] = env('WINDLASS_VIEWER').split(':');
const set = env('WINDLASS_SET');
const bad = `${set}-bad`;

const started = Date.now();
const browser = await launch();
const { page, external, errors: pageErrors } = await newPage(browser);
const screenshot = (name) => shoot(page, name);
const row = (name) => page.locator(`tr[data-appset="${name}"]`);
const rollout = page.getByRole('region', { name: 'Rollout' });

try {
  const { token } = await api('POST', '/api/v1/session', undefined, { username: 'admin', password: adminPassword });

  await step('1 the Sets page lists the set with its generator, apps and state', async () => {
    await page.goto('/applicationsets');
    await page.waitForURL(/\/login\?return=%2Fapplicationsets/);
    await login(page, 'admin', adminPassword);
    await page.waitForURL(/\/applicationsets$/);
    await page.getByRole('heading', { name: 'ApplicationSets', exact: true }).waitFor();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Sets' }).and(page.locator('[aria-current="page"]')).waitFor();
    await row(set).locator('.generators').filter({ hasText: 'git directories envs *' }).waitFor();
    check((await row(set).locator('td').nth(3).innerText()).trim() === '3', `the set's row does not count 3 apps: ${await row(set).innerText()}`);
    await row(set).getByTitle('Set: Ready', { exact: true }).waitFor();
  });

  await step('2 a set created through the API appears live, with its error', async () => {
    await page.locator('.live-live').waitFor();
    await page.evaluate(() => {
      window.__sameDocument = true;
    });
    await api('POST', '/api/v1/applicationsets', token, {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: bad },
      spec: {
        generators: [{ list: { elements: [{ name: 'Not_A_Name' }] } }],
        template: {
          metadata: { name: '{{name}}' },
          spec: { project: 'default', source: { repoURL: 'https://git.example/none.git', path: '.' }, destination: { namespace: 'none' } },
        },
      },
    });
    await row(bad).getByTitle('Set: Error', { exact: true }).waitFor({ timeout: 30_000 });
    await row(bad).locator('.set-error').filter({ hasText: 'Not_A_Name' }).waitFor();
    check(await page.evaluate(() => window.__sameDocument === true), 'the list page reloaded');
    await row(set).getByRole('button', { name: `Refresh ${set}` }).click();
    await page.locator('.toast').filter({ hasText: `${set} evaluated` }).waitFor();
    await screenshot('ui-appsets.png');
  });

  await step('3 the set page shows its apps, the generators\' output and the rollout halted by staging', async () => {
    await row(set).getByRole('link', { name: set, exact: true }).click();
    await page.getByRole('heading', { name: set, exact: true }).waitFor();
    const apps = page.locator('table.set-apps tbody tr');
    await apps.nth(2).waitFor();
    check((await apps.count()) === 3, `the set page lists ${await apps.count()} apps, not 3`);
    await page.locator('table.set-apps').getByRole('link', { name: `${set}-dev`, exact: true }).waitFor();
    const preview = page.locator('table.set-preview tbody tr');
    await preview.nth(2).waitFor();
    check((await preview.count()) === 3, `the preview has ${await preview.count()} apps, not 3`);
    await page.locator('table.set-preview').getByText('spec.generators[0] #1').waitFor();
    await rollout.getByTitle('Rollout: Halted', { exact: true }).waitFor({ timeout: 180_000 });
    await rollout.locator('.rollout-message').filter({ hasText: `Halted by ${set}-staging` }).waitFor();
    await rollout.locator(`[data-step="1"]`).getByTitle('Step 1: Completed', { exact: true }).waitFor();
    await rollout.locator(`[data-step="2"][aria-current="step"]`).getByTitle('Step 2: Halted', { exact: true }).waitFor();
    await rollout.locator(`[data-step="2"] .halted-by[data-app="default/${set}-staging"]`).getByTitle('App: Failed', { exact: true }).waitFor();
    await rollout.locator(`[data-step="3"]`).getByTitle('Step 3: Waiting', { exact: true }).waitFor();
    await rollout.locator(`[data-step="3"] [data-app="default/${set}-prod"]`).getByTitle('App: Waiting', { exact: true }).waitFor();
    const controls = rollout.getByRole('group', { name: 'Rollout controls' });
    check(await controls.getByRole('button', { name: 'Pause', exact: true }).isDisabled(), 'Pause is enabled on a halted rollout');
    check(await controls.getByRole('button', { name: 'Resume', exact: true }).isEnabled(), 'Resume is disabled on a halted rollout');
    await screenshot('ui-appset-rollout.png');
  });

  await step('4 a read-only user sees the set but cannot control it', async () => {
    const v = await newPage(browser);
    try {
      await v.page.goto(`/applicationsets/${set}`);
      await login(v.page, viewer, viewerPassword);
      await v.page.getByRole('heading', { name: set, exact: true }).waitFor();
      const controls = v.page.getByRole('group', { name: 'Rollout controls' });
      for (const b of ['Pause', 'Resume', 'Abort']) {
        await controls.getByRole('button', { name: `${b} (not permitted)` }).and(v.page.locator('[disabled]')).waitFor();
      }
      await v.page.getByText('Previewing needs applicationsets, create on this set.').waitFor();
      check((await v.page.getByRole('button', { name: 'Delete', exact: true }).count()) === 0, 'a read-only user is offered Delete');
      check(v.errors.length === 0, `errors in the viewer's page: ${v.errors.join('; ')}`);
    } finally {
      await v.context.close();
    }
  });

  await step('5 abort ends the rollout', async () => {
    await rollout.getByRole('button', { name: 'Abort', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: `Abort the rollout of ${set}` });
    await dialog.getByLabel('Reason (optional)').fill('staging is broken');
    await dialog.getByRole('button', { name: 'Abort the rollout' }).click();
    await rollout.getByTitle('Rollout: Aborted', { exact: true }).waitFor();
    check((await rollout.getByRole('group', { name: 'Rollout controls' }).count()) === 0, 'an aborted rollout still has controls');
    const st = await api('GET', `/api/v1/applicationsets/${set}/rollout`, token);
    check(st.phase === 'Aborted', `the API says the rollout is ${st.phase}`);
  });

  await step('6 delete the failing set from the list', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Sets' }).click();
    await row(bad).getByRole('button', { name: `Delete ${bad}` }).click();
    const dialog = page.getByRole('dialog', { name: `Delete ${bad}` });
    const confirm = dialog.getByRole('button', { name: 'Delete', exact: true });
    check(await confirm.isDisabled(), 'Delete is enabled before the name is typed');
    await dialog.getByLabel(`Type ${bad} to confirm`).fill(bad);
    await confirm.click();
    await row(bad).waitFor({ state: 'detached', timeout: 30_000 });
    await row(set).waitFor();
  });

  check(pageErrors.length === 0, `errors in the page: ${pageErrors.join('; ')}`);
  check(external.length === 0, `requests left the origin: ${external.join(', ')}`);
  console.log(`ok   all (${((Date.now() - started) / 1000).toFixed(1)} s)`);
} catch {
  await failed(page);
} finally {
  await browser.close();
}
