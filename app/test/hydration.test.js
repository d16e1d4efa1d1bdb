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
import { after, before, describe, test } from 'node:test';
import { assertNoProblems, assertRootAdopted, OWNED_BY_REACT, parseDocument, settle, withPage } from './browser.js';
import { builds, startStack, stopProcess, testPrerequisites } from './stack.js';

const PAGES = ['/', '/products/42'];
const STEP_MS = 10_000; // any single wait (page load, hydration, a click's effect)

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

testPrerequisites();

describe('hydration in Chromium (real renderer + edge, and the Go shop)', { timeout: 120_000 }, () => {
  /** @type {import('./stack.js').Stack} */
  let stack;
  before(async () => {
    stack = await startStack({
      name: 'hydration',
      // A busy 2-core machine (Chromium is rendering too) must not turn a page into the
      // CSR fallback: this test is about hydration, not deadlines.
      edgeEnv: { SSR_EDGE_RENDER_TIMEOUT: '2s' },
      // The demo shop (bin/shop): the same pages with props from Go and SQLite.
      shops: { demo: ['-render-timeout', '2s'] },
    });
  });
  after(() => stack?.close());

  const servers = [
    ...builds.map((b) => ({ name: b.name, server: () => stack.edges[b.name] })),
    { name: 'shop (props from Go and SQLite)', server: () => stack.shops.demo },
  ];
  for (const { name, server } of servers) {
    for (const pathname of PAGES) {
      test(`${name}: ${pathname} hydrates the server markup without errors`, async () => {
        const edge = server();
        await withPage(stack.browser, edge.url + pathname, {}, async ({ page, response, problems }) => {
          assert.equal(response.status(), 200);
          assert.equal(response.headers()['x-ssr-fallback'], undefined, 'the edge fell back to the CSR shell');
          const html = await response.text();
          assert.ok(html.includes(`src="${edge.manifest.scripts[0]}"`), `the document does not load the ${name} client (${edge.manifest.scripts[0]})`);
          const { rootHTML, data } = parseDocument(html);
          assert.match(rootHTML, /^<header/, 'the server markup in #root');
          assert.ok(data.props, '__SSR_DATA__ has props');

          await waitForReact(page);
          await assertRootAdopted(page, '<header>');
          await assertCartCounts(page);
          await settle(page);
          assertNoProblems(problems, `${name} ${pathname}`);
        });
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
      await withPage(stack.browser, stack.edges.development.url + '/', {
        route: tampered((html) => html.replace('<a class="logo" href="/">', '<a class="logo" href="/elsewhere">')),
      }, async ({ page, problems }) => {
        await waitForReact(page);
        await settle(page);
        assert.ok(
          problems.some((p) => /hydrat/i.test(p) && p.includes('/elsewhere')),
          `the collector did not report the attribute mismatch; it has:\n${problems.join('\n') || '(nothing)'}`,
        );
      });
    });

    for (const build of builds) {
      test(`${build.name}: a text mismatch is reported and the server markup is replaced`, async () => {
        await withPage(stack.browser, stack.edges[build.name].url + '/', {
          route: tampered((html) => html.replace('<h1>All products</h1>', '<h1>All productz</h1>')),
        }, async ({ page, problems }) => {
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
        });
      });
    }
  });

  describe('renderer down: the client-side-render shell', () => {
    before(async () => {
      await stopProcess(stack.renderer);
    });

    for (const build of builds) {
      // A listing page no earlier test requested: the edge's cache has no copy of it to
      // serve instead, so the CSR shell is what comes back.
      test(`${build.name}: /?page=9 renders in the browser from the empty shell`, async () => {
        await withPage(stack.browser, stack.edges[build.name].url + '/?page=9', {}, async ({ page, response, problems }) => {
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
        });
      });
    }

    // The shop's loader still reads the database: the document carries its props, and the
    // browser renders the page from them.
    test('shop: /?page=8 renders in the browser from the props Go loaded', async () => {
      await withPage(stack.browser, stack.shops.demo.url + '/?page=8', {}, async ({ page, response, problems }) => {
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
      });
    });
  });
});
