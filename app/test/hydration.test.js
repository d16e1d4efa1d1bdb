// Hydration in a real browser, against the real stack: the renderer (pinned Node, demo server
// bundle, gRPC on a unix socket) and the edge binary (document shell, /assets/), with Debian's
// Chromium driven by playwright-core (which never downloads a browser).
//
//   make test-browser                                    # builds what it needs, installs Chromium
//   renderer/node_modules/.bin/node --test app/test/     # from the repository root, once built
//
// Needs: bin/edge, bin/shop, app/dist/server/server.js, the production client build app/dist/client and
// the development client build app/dist/client-dev (`node app/build.mjs --dev --client-outdir
// app/dist/client-dev`). Production React does not report attribute mismatches, so every case
// runs against both client builds, each behind its own edge; the renderer is shared.
//
// A page passes when: the document came server-rendered (no X-SSR-Fallback, #root not empty),
// the browser logged no console error, no page error and no warning about hydration, the
// server's DOM nodes were adopted by React (hydrated, not replaced), and a click updates the
// cart counter. The client-side-render shell is checked with the renderer SIGKILLed. A
// self-check serves tampered documents and proves the collector and the "not replaced" check
// would catch a mismatch.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium } from 'playwright-core';
import {
  assertNoProblems, CHROMIUM, CHROMIUM_ARGS, OWNED_BY_REACT, openPage, parseDocument, settle,
} from './browser.js';
import { builds, missingPrerequisite, paths, startProcess, stopProcess, waitLog } from './stack.js';

const PAGES = ['/', '/products/42'];
const STEP_MS = 10_000; // any single wait (page load, hydration, a click's effect)

// ---------------------------------------------------------------------------------------
// Browser side.

/** Waits until React owns the first "Add to cart" button (hydration or client render done). */
async function waitForReact(page) {
  await page.waitForFunction(
    `(${OWNED_BY_REACT})(document.querySelector('[data-testid="add-to-cart"]'))`,
    null,
    { timeout: STEP_MS },
  );
}

/** Clicks "Add to cart" twice and waits for the header counter to follow. */
async function assertCartCounts(page) {
  const count = page.locator('[data-testid="cart-count"]');
  assert.equal(await count.textContent(), '0', 'cart counter before any click');
  const buttons = page.locator('[data-testid="add-to-cart"]');
  for (const [i, want] of [[0, '1'], [1, '2']]) {
    await buttons.nth(i).click();
    await page.waitForFunction(
      (w) => document.querySelector('[data-testid="cart-count"]')?.textContent === w,
      want,
      { timeout: STEP_MS },
    ).catch(async () => {
      assert.fail(`cart counter did not become ${want} after a click (it reads ${await count.textContent()}): the page is not interactive`);
    });
  }
}

// ---------------------------------------------------------------------------------------


// Its own test, so that a missing browser counts as a failure, not only as cancelled tests.
test('prerequisites: Chromium, the edge and shop binaries, the server bundle and both client builds', () => {
  const missing = missingPrerequisite();
  if (missing) assert.fail(missing);
});

describe('hydration in Chromium (real renderer + edge, and the Go shop)', { timeout: 120_000 }, () => {
  let tmpDir;
  let renderer;
  let browser;
  /** @type {Promise<import('playwright-core').Browser> | undefined} */
  let browserLaunch;
  /** @type {Record<string, {proc: any, url: string, manifest: any}>} */
  const edges = {};
  /** The demo shop (bin/shop): the same pages with props from Go and SQLite, production client. */
  /** @type {{proc: any, url: string, manifest: any}} */
  let shop;

  before(async () => {
    const missing = missingPrerequisite();
    if (missing) throw new Error(missing);
    tmpDir = mkdtempSync(path.join(os.tmpdir(), 'sidecar-ssr-hydration-'));
    const socket = path.join(tmpDir, 'r.sock');

    // Launched alongside the stack; after() closes it even when a later step of this hook fails.
    browserLaunch = chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 30_000 });
    renderer = startProcess('renderer', paths.node, [paths.renderer], {
      SSR_RENDERER_GRPC_ADDRESS: `unix://${socket}`,
      SSR_RENDERER_HTTP_LISTEN: '127.0.0.1:0',
      SSR_RENDERER_BUNDLE: paths.bundle,
      SSR_RENDERER_THREADS: '2',
    });
    await Promise.all([
      waitLog(renderer, { msg: 'ready' }, 60_000),
      ...builds.map(async (build) => {
        const proc = startProcess(`edge (${build.name})`, paths.edge, [], {
          SSR_EDGE_LISTEN: '127.0.0.1:0',
          SSR_EDGE_ADMIN_LISTEN: '127.0.0.1:0',
          SSR_EDGE_ASSETS_DIR: build.dir,
          SSR_RENDERER_GRPC_ADDRESS: `unix://${socket}`,
          // A busy 2-core machine (Chromium is rendering too) must not turn a page into the
          // CSR fallback: this test is about hydration, not deadlines.
          SSR_EDGE_RENDER_TIMEOUT: '2s',
        });
        const line = await waitLog(proc, { msg: 'listening', listener: 'public' });
        const manifest = JSON.parse(readFileSync(path.join(build.dir, 'manifest.json'), 'utf8'));
        edges[build.name] = { proc, url: `http://${line.address}`, manifest };
      }),
      (async () => {
        const production = builds.find((b) => b.name === 'production');
        const proc = startProcess('shop', paths.shop, [
          '-listen', '127.0.0.1:0', '-admin-listen', '127.0.0.1:0', '-db', path.join(tmpDir, 'shop.db'),
          '-renderer', `unix://${socket}`, '-assets', production.dir, '-render-timeout', '2s',
        ], {});
        const line = await waitLog(proc, { msg: 'listening', listener: 'public' });
        shop = { proc, url: `http://${line.address}`, manifest: JSON.parse(readFileSync(path.join(production.dir, 'manifest.json'), 'utf8')) };
      })(),
    ]);
    browser = await browserLaunch;
  });

  after(async () => {
    const launched = await browserLaunch?.catch(() => null);
    await launched?.close().catch(() => {});
    await Promise.all([renderer, shop?.proc, ...Object.values(edges).map((e) => e.proc)].filter(Boolean).map(stopProcess));
    if (tmpDir) rmSync(tmpDir, { recursive: true, force: true });
  });

  const servers = [...builds.map((b) => ({ name: b.name, server: () => edges[b.name] })), { name: 'shop (props from Go and SQLite)', server: () => shop }];
  for (const { name, server } of servers) {
    for (const pathname of PAGES) {
      test(`${name}: ${pathname} hydrates the server markup without errors`, async () => {
        const edge = server();
        const build = { name };
        const { context, page, response, problems } = await openPage(browser, edge.url + pathname);
        try {
          assert.equal(response.status(), 200);
          assert.equal(response.headers()['x-ssr-fallback'], undefined, 'the edge fell back to the CSR shell');
          const html = await response.text();
          assert.ok(html.includes(`src="${edge.manifest.scripts[0]}"`), `the document does not load the ${build.name} client (${edge.manifest.scripts[0]})`);
          const { rootHTML, data } = parseDocument(html);
          assert.match(rootHTML, /^<header/, 'the server markup in #root');
          assert.ok(data.props, '__SSR_DATA__ has props');

          await waitForReact(page);
          assert.ok(
            await page.evaluate(
              `(${OWNED_BY_REACT})(window.__firstRootChild) && window.__firstRootChild === document.getElementById('root').firstElementChild`,
            ),
            'the server-rendered <header> was replaced instead of hydrated',
          );
          await assertCartCounts(page);
          await settle(page);
          assertNoProblems(problems, `${build.name} ${pathname}`);
        } finally {
          await context.close();
        }
      });
    }
  }

  // The harness must be able to fail: documents whose server markup differs from what the
  // client renders, served in place of the edge's (page.route), with the development client.
  describe('self-check: a mismatch is caught', () => {
    const tampered = (replace) => async (route) => {
      const response = await route.fetch();
      const html = await response.text();
      const changed = replace(html);
      assert.notEqual(changed, html, 'the tampering matched nothing');
      await route.fulfill({ response, body: changed });
    };

    test('an attribute mismatch is reported on the console (development React)', async () => {
      const { context, page, problems } = await openPage(browser, edges.development.url + '/', {
        route: tampered((html) => html.replace('<a class="logo" href="/">', '<a class="logo" href="/elsewhere">')),
      });
      try {
        await waitForReact(page);
        await settle(page);
        assert.ok(
          problems.some((p) => /hydrat/i.test(p) && p.includes('/elsewhere')),
          `the collector did not report the attribute mismatch; it has:\n${problems.join('\n') || '(nothing)'}`,
        );
      } finally {
        await context.close();
      }
    });

    for (const build of builds) {
      test(`${build.name}: a text mismatch is reported and the server markup is replaced`, async () => {
        const { context, page, problems } = await openPage(browser, edges[build.name].url + '/', {
          route: tampered((html) => html.replace('<h1>All products</h1>', '<h1>All productz</h1>')),
        });
        try {
          await waitForReact(page);
          await settle(page);
          assert.ok(
            problems.some((p) => /hydrat/i.test(p)),
            `the collector did not report the text mismatch; it has:\n${problems.join('\n') || '(nothing)'}`,
          );
          assert.equal(
            await page.evaluate(`window.__firstRootChild === document.getElementById('root').firstElementChild`),
            false,
            'the "hydrated, not replaced" check did not notice that React re-rendered the root',
          );
        } finally {
          await context.close();
        }
      });
    }
  });

  describe('renderer down: the client-side-render shell', () => {
    before(async () => {
      await stopProcess(renderer);
    });

    for (const build of builds) {
      // A listing page no earlier test requested: the edge's cache has no copy of it to
      // serve instead, so the CSR shell is what comes back.
      test(`${build.name}: /?page=9 renders in the browser from the empty shell`, async () => {
        const { context, page, response, problems } = await openPage(browser, edges[build.name].url + '/?page=9');
        try {
          assert.equal(response.status(), 200);
          assert.ok(response.headers()['x-ssr-fallback'], 'no X-SSR-Fallback header with the renderer down');
          const { rootHTML, data } = parseDocument(await response.text());
          assert.equal(rootHTML, '', 'the fallback root is empty');
          assert.equal(data.props, undefined, 'the fallback sends no props');

          await waitForReact(page);
          assert.equal(await page.locator('article.card').count(), 100, 'product cards rendered client-side');
          await assertCartCounts(page);
          await settle(page);
          assertNoProblems(problems, `${build.name} CSR shell`);
        } finally {
          await context.close();
        }
      });
    }

    // The shop's loader still reads the database: the document carries its props, and the
    // browser renders the page from them.
    test('shop: /?page=8 renders in the browser from the props Go loaded', async () => {
      const { context, page, response, problems } = await openPage(browser, shop.url + '/?page=8');
      try {
        assert.equal(response.status(), 200);
        assert.equal(response.headers()['x-ssr-fallback'], 'renderer-unavailable');
        const { rootHTML, data } = parseDocument(await response.text());
        assert.equal(rootHTML, '', 'the fallback root is empty');
        assert.equal(data.props?.page, 8, 'the fallback carries the loader\'s props');
        assert.equal(data.props?.products?.length, 100);

        await waitForReact(page);
        assert.equal(await page.locator('article.card').count(), 100, 'product cards rendered client-side');
        assert.ok(await page.getByText(data.props.products[0].name).first().isVisible(), 'the first product of the props is on the page');
        await assertCartCounts(page);
        await settle(page);
        assertNoProblems(problems, 'shop CSR with props');
      } finally {
        await context.close();
      }
    });
  });
});
