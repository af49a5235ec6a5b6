// B8's web UI figure (run by test/bench): the time from navigation start
// to the list's first page on screen in Chromium, as the UI's performance
// mark records it, each sample in a new browser context (no cache). It
// prints one RESULT line of JSON.
import { env, firstPageMark, launch, newPage, sessionCookies, step } from '../ui/lib.mjs';

const password = env('WINDLASS_ADMIN_PASSWORD');
const samples = Number(env('WINDLASS_SAMPLES'));

const browser = await launch();
const result = { firstPaintMs: [], rows: 0 };
try {
  const { cookies } = await sessionCookies(password);
  await step(`${samples} cold loads of /applications`, async () => {
    for (let i = 0; i < samples; i++) {
      const { context, page } = await newPage(browser);
      await context.addCookies(cookies);
      await page.goto('/applications');
      const handle = await page.waitForFunction((m) => performance.getEntriesByName(m)[0]?.startTime, firstPageMark, { timeout: 60_000 });
      result.firstPaintMs.push(Math.round(await handle.jsonValue()));
      result.rows = await page.locator('table.apps tbody tr').count();
      await context.close();
    }
  });
  console.log('RESULT ' + JSON.stringify(result));
} catch (e) {
  process.exitCode = 1;
} finally {
  await browser.close();
}
