// What the browser scripts share: the environment TestBrowser and
// TestListScale set, launching Debian's chromium, steps and checks.
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(new URL('../../web/package.json', import.meta.url));
const { chromium } = require('playwright-core');

export function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run this script through go test ./test/ui)`);
  return v;
}

export const base = env('WINDLASS_URL');
export const origin = new URL(base).origin;
export const shots = env('WINDLASS_SCREENSHOTS');
mkdirSync(shots, { recursive: true });

// The flags Debian's chromium needs here: as root, headless, and without
// the background connections a closed network refuses.
const chromiumArgs = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-dev-shm-usage',
];

export function launch() {
  return chromium.launch({ executablePath: env('CHROMIUM'), headless: true, args: chromiumArgs });
}

/** newPage opens a page in a new context; requests leaving the origin are collected. */
export async function newPage(browser, options = {}) {
  const context = await browser.newContext({ baseURL: base, viewport: { width: 1440, height: 900 }, colorScheme: 'light', ...options });
  const external = [];
  context.on('request', (r) => {
    const u = new URL(r.url());
    if (u.origin !== origin && u.protocol !== 'data:') external.push(r.url());
  });
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  return { context, page, external, errors };
}

export async function step(name, fn) {
  const t = Date.now();
  try {
    await fn();
  } catch (e) {
    console.log(`FAIL ${name}: ${e.stack ?? e}`);
    throw e;
  }
  console.log(`ok   ${name} (${((Date.now() - t) / 1000).toFixed(1)} s)`);
}

export function check(cond, what) {
  if (!cond) throw new Error(what);
}

/** api calls the REST API from Node, with a bearer token; it returns the decoded JSON. */
export async function api(method, p, token, body) {
  const res = await fetch(base + p, {
    method,
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** screenshot saves the page into the screenshot directory, without the notifications in front. */
export async function screenshot(page, name) {
  for (const b of await page.locator('.toast button').all()) await b.click({ timeout: 1000 }).catch(() => undefined);
  await page.screenshot({ path: path.join(shots, name) });
}

/** failed saves a screenshot of the page as it failed and sets a failing exit code. */
export async function failed(page) {
  const shot = path.join(shots, 'failure.png');
  await page.screenshot({ path: shot }).catch(() => undefined);
  console.log(`screenshot of the failure: ${shot}`);
  process.exitCode = 1;
}

/** login logs in on the login page. */
export async function login(page, user, password) {
  await page.getByLabel('Username').fill(user);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in', exact: true }).click();
}

/** firstPageMark is the performance mark the UI sets when the list's first page is on screen. */
export const firstPageMark = 'windlass:apps-first-page';

/** sessionCookies logs admin in through the API: its token, and the session cookies for a context that has seen nothing. */
export async function sessionCookies(password) {
  const res = await fetch(base + '/api/v1/session', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password }),
  });
  check(res.ok, `login: ${res.status}`);
  const { token } = await res.json();
  return {
    token,
    cookies: res.headers.getSetCookie().map((c) => {
      const [pair] = c.split(';');
      const i = pair.indexOf('=');
      return { name: pair.slice(0, i), value: pair.slice(i + 1), url: base };
    }),
  };
}
