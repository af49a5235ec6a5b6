// The list's first page with many applications (run by TestListScale):
// the time from navigation start to the first page on screen, as the UI's
// performance mark records it, cold (a new browser context: no cache) and
// on reloads, and the list API's time. It prints one RESULT line of JSON.
import { api, check, env, firstPageMark, launch, newPage, screenshot, sessionCookies, step } from './lib.mjs';

const password = env('WINDLASS_ADMIN_PASSWORD');
const PAGE = 50;
const reloads = 5;

async function firstPage(page) {
  await page.locator('table.apps tbody tr').nth(PAGE - 1).waitFor();
  const mark = await page.evaluate((m) => performance.getEntriesByName(m)[0]?.startTime, firstPageMark);
  check(typeof mark === 'number', 'the UI recorded no first-page mark');
  return Math.round(mark);
}

const browser = await launch();
const result = { coldMs: 0, warmMs: [], nextMs: [], apiMs: [], rows: 0 };
try {
  const { token, cookies } = await sessionCookies(password);
  await step('cold: a new context, straight to /applications', async () => {
    const { context, page } = await newPage(browser);
    await context.addCookies(cookies);
    await page.goto('/applications');
    result.coldMs = await firstPage(page);
    result.rows = await page.locator('table.apps tbody tr').count();
    await context.close();
  });
  await step(`warm: ${reloads} reloads, then Next 3 times`, async () => {
    const { context, page } = await newPage(browser);
    await context.addCookies(cookies);
    await page.goto('/applications');
    await firstPage(page);
    for (let i = 0; i < reloads; i++) {
      await page.reload();
      result.warmMs.push(await firstPage(page));
    }
    await page.locator('.live-live').waitFor();
    await screenshot(page, 'ui-list-scale.png');
    // The next page, by its button.
    for (let i = 0; i < 3; i++) {
      const first = await page.locator('table.apps tbody tr').first().getAttribute('data-app');
      const t = performance.now();
      await page.getByRole('button', { name: 'Next', exact: true }).click();
      await page.waitForFunction((f) => document.querySelector('table.apps tbody tr')?.getAttribute('data-app') !== f, first);
      result.nextMs.push(Math.round(performance.now() - t));
    }
    await context.close();
  });
  await step('the list API, 5 times', async () => {
    for (let i = 0; i < 5; i++) {
      const t = performance.now();
      const list = await api('GET', `/api/v1/applications?limit=${PAGE}`, token);
      result.apiMs.push(Math.round(performance.now() - t));
      check(list.items.length === PAGE, `the API answered ${list.items.length} rows`);
    }
  });
  console.log('RESULT ' + JSON.stringify(result));
} catch (e) {
  process.exitCode = 1;
} finally {
  await browser.close();
}
