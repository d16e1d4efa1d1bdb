// What the browser tests share (hydration.test.js and streaming.test.js here,
// adopt/adopt.test.js for a user's own app): how Chromium is launched, how a page is opened and
// watched, and how a document the edge wrote is read. Debian's Chromium, driven by
// playwright-core, which never downloads a browser.
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
  '--disable-quic',
];

/** Launches Chromium, headless. */
export function launchBrowser() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 30_000 });
}

/**
 * Collects what makes a page fail: any console error, any uncaught page error, any console
 * warning that mentions hydration.
 */
export function collectProblems(page) {
  const problems = [];
  page.on('console', (message) => {
    const type = message.type();
    const text = message.text();
    const where = message.location()?.url ?? '';
    if (type === 'error' || (type === 'warning' && /hydrat|mismatch|did not match|didn't match/i.test(text))) {
      problems.push(`console.${type}: ${text.slice(0, 2000)}${where ? ` (${where})` : ''}`);
    }
  });
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.stack ?? error.message}`));
  return problems;
}

// Runs before any page script: remembers the first element the HTML parser puts in #root,
// i.e. the server-rendered markup (in the CSR shell, the first node React creates instead).
export function rememberFirstRootChild() {
  const observer = new MutationObserver(() => {
    const first = document.getElementById('root')?.firstElementChild;
    if (first) {
      window.__firstRootChild = first;
      observer.disconnect();
    }
  });
  observer.observe(document, { childList: true, subtree: true });
}

/**
 * React marks every DOM node it owns with a `__reactFiber$<random>` property: a server node
 * that has it was adopted by hydration. (A React internal: if a React upgrade renames it, the
 * test fails, it never passes by accident.)
 */
export const OWNED_BY_REACT = (node) => !!node && Object.keys(node).some((key) => key.startsWith('__reactFiber$'));

/**
 * Opens url in a fresh context, with the first root child remembered and problems collected;
 * returns the page, its document response and its problems. stepMs bounds each later wait;
 * waitUntil is page.goto's ('commit' returns while a streamed document is still arriving);
 * init is one more script to run before any of the page's own; cookies, the visitor's, for
 * url's origin.
 */
export async function openPage(browser, url, { route, stepMs = 10_000, waitUntil = 'load', init, cookies } = {}) {
  const context = await browser.newContext();
  if (cookies) await context.addCookies(cookies.map((c) => ({ ...c, url })));
  // Chromium asks every origin for /favicon.ico on its own; an app that declares no icon
  // answers it with its not-found page (404), which Chromium logs as a console error that
  // has nothing to do with the page. Answer it here; every other request is real.
  await context.route(/\/favicon\.ico$/, (fulfil) => fulfil.fulfill({ status: 204 }));
  await context.addInitScript(rememberFirstRootChild);
  if (init) await context.addInitScript(init);
  const page = await context.newPage();
  page.setDefaultTimeout(stepMs);
  const problems = collectProblems(page);
  if (route) await page.route(url, route);
  const response = await page.goto(url, { waitUntil });
  return { context, page, response, problems };
}

/**
 * openPage, then `check` with what it opened; the page's context is closed whatever happens.
 * @template T
 * @param {(opened: Awaited<ReturnType<typeof openPage>>) => Promise<T>} check
 * @returns {Promise<T>}
 */
export async function withPage(browser, url, options, check) {
  const opened = await openPage(browser, url, options);
  try {
    return await check(opened);
  } finally {
    await opened.context.close();
  }
}

/**
 * The server's first #root child (rememberFirstRootChild) is still there and React owns it:
 * hydrated, not replaced. `markup` names it in the failure.
 */
export async function assertRootAdopted(page, markup) {
  assert.ok(
    await page.evaluate(`(${OWNED_BY_REACT})(window.__firstRootChild) && window.__firstRootChild === document.getElementById('root').firstElementChild`),
    `the server-rendered ${markup} was replaced instead of hydrated`,
  );
}

/** The #root inner HTML, the parsed __SSR_DATA__ and every <script> start tag of a document. */
export function parseDocument(html) {
  const match = html.match(
    /<div id="root">([\s\S]*?)<\/div>\s*<script\b(?=[^>]*\bid="__SSR_DATA__")(?=[^>]*\btype="application\/json")[^>]*>([\s\S]*?)<\/script>/,
  );
  assert.ok(match, `no #root followed by <script id="__SSR_DATA__" type="application/json"> in the document:\n${html.slice(0, 3000)}`);
  return { rootHTML: match[1], data: JSON.parse(match[2]), scripts: html.match(/<script\b[^>]*>/g) ?? [] };
}

/** Lets late console messages (e.g. from the last commit) arrive before the final check. */
export async function settle(page) {
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 50))));
}

export function assertNoProblems(problems, what) {
  assert.deepEqual(problems, [], `${what}: the browser reported problems:\n${problems.join('\n')}`);
}
