// Hydration of a streamed page in Chromium: the demo's product page with its reviews in a
// Suspense boundary (app/src/pages/ProductReviews.jsx, a route with `stream: true`), against
// the real renderer and edge, with both client builds (production React does not report
// attribute mismatches), and the Go shop (bin/shop, props from Go) under a strict nonce
// Content-Security-Policy (`-csp`): a script without the response's nonce, React's own
// included, would not run and Chromium would log the refusal as a console error.
//
//   renderer/node_modules/.bin/node --test app/test/streaming.test.js   # once `make test-browser` built
//
// The renderer fetches each product's reviews from a gate this test serves
// (SSR_DEMO_REVIEWS_URL), and so does the shop, whose reviews are its Go loader's deferred
// value (-reviews-url); the gate opens when the test chooses: "the browser shows the shell
// before the reviews" is an order of events, not a race with a clock. Each page is checked
// three ways:
// - live: the shell is in the browser's DOM while the reviews are held back; released, they
//   stream in, and the page hydrates;
// - from the cache: the complete document the streamed render stored, served whole;
// - past the stream deadline: the edge closes the document with the boundary still pending
//   and leaves it to the browser, which renders the reviews itself; the shop's reviews, a
//   value only its server has, did not come in time, and the section says so while the rest
//   of the page hydrates.
// Each passes with no console error, no page error, no hydration warning, the server's nodes
// adopted by React (not replaced), and the reviews visible; under the CSP, every script
// element of the document carries the nonce its policy names.
import assert from 'node:assert/strict';
import http from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { assertNoProblems, assertRootAdopted, OWNED_BY_REACT, settle, withPage } from './browser.js';
import { builds, startStack, testPrerequisites } from './stack.js';

const STEP_MS = 10_000; // any single wait (page load, hydration, the reviews appearing)
// The route past its stream deadline: the shell has render_timeout (3 s, far above its
// few milliseconds on a loaded 2-core runner) and the boundary, whose gate stays shut, is
// left to the browser when stream_timeout (as long, the least the config allows) runs out.
const EDGE_CONFIG = `edge:
  routes:
    - pattern: "GET /products/{id}/reviews"
      page: product-reviews
      stream: true
      render_timeout: 10s
      stream_timeout: 20s
      hard_timeout: 30s
      cache: {ttl: 5m, query: []}
    - pattern: "GET /late/products/{id}/reviews"
      page: product-reviews
      stream: true
      render_timeout: 3s
      stream_timeout: 3s
      hard_timeout: 30s
      cache: {ttl: 5m, query: []}
`;
const LOADING = '[data-testid="reviews-loading"]';
const REVIEWS = '[data-testid="reviews"]';
const UNAVAILABLE = '[data-testid="unavailable"]';

/** Holds back each product's reviews until open(id). */
async function startGates() {
  /** @type {Map<string, {opened: Promise<void>, open: () => void}>} */
  const gates = new Map();
  const gate = (id) => {
    if (!gates.has(id)) {
      const { promise, resolve } = Promise.withResolvers();
      gates.set(id, { opened: promise, open: resolve });
    }
    return gates.get(id);
  };
  const server = http.createServer(async (req, res) => {
    await gate(new URL(req.url, 'http://gate').searchParams.get('product')).opened;
    res.end();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    open: (id) => gate(String(id)).open(),
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

// Runs before any page script: remembers the first reviews list the HTML parser inserts,
// i.e. the server's (streamed into a hidden segment and moved into place by React's script).
function rememberServerReviews() {
  const observer = new MutationObserver(() => {
    const reviews = document.querySelector('[data-testid="reviews"]');
    if (reviews) {
      window.__serverReviews = reviews;
      observer.disconnect();
    }
  });
  observer.observe(document, { childList: true, subtree: true });
}

/**
 * Waits until React owns the reviews list: hydrated from the server's, or rendered here.
 * Polled with page.evaluate (DevTools' evaluation, which no page's CSP governs): a strict
 * CSP refuses waitForFunction's evaluation of its predicate.
 */
async function waitForReviews(page) {
  const owned = () => page.evaluate(`(${OWNED_BY_REACT})(document.querySelector('${REVIEWS}'))`);
  for (const deadline = Date.now() + STEP_MS; !(await owned());) {
    assert.ok(Date.now() < deadline, `React did not take over the reviews within ${STEP_MS} ms`);
    await delay(50);
  }
  assert.ok(await page.locator(REVIEWS).isVisible(), 'the reviews are not visible');
  assert.equal(await page.locator(`${REVIEWS} li`).count(), 3, 'the product\'s three reviews');
  assert.equal(await page.locator(LOADING).count(), 0, 'the loading fallback is still there');
}

/** The server's root markup and reviews were adopted by React, not replaced. */
async function assertAdopted(page, { reviews }) {
  await assertRootAdopted(page, '<header>');
  if (reviews) {
    assert.ok(
      await page.evaluate(`window.__serverReviews === document.querySelector('${REVIEWS}')`),
      'the server-rendered reviews were replaced instead of hydrated',
    );
  }
}

/** Every script element of html carries the nonce of the response's policy. */
function assertNonced(headers, html) {
  const nonce = headers['content-security-policy']?.match(/'nonce-([^']+)'/)?.[1];
  assert.ok(nonce, `no nonce in the response's Content-Security-Policy: ${headers['content-security-policy']}`);
  const scripts = html.match(/<script\b[^>]*>/g) ?? [];
  assert.ok(scripts.length >= 3, `want the client's, the data's and React's own scripts at least, got ${scripts.length}`);
  for (const tag of scripts) assert.ok(tag.includes(` nonce="${nonce}"`), `${tag} lacks the response's nonce`);
}

testPrerequisites();

describe('a streamed page hydrates in Chromium: live, from the cache, past the stream deadline', { timeout: 180_000 }, () => {
  let gates;
  /** @type {import('./stack.js').Stack} */
  let stack;
  before(async () => {
    gates = await startGates();
    // The shop under its CSP: one with room for the reviews, one whose deadline passes; the
    // timeouts as EDGE_CONFIG's, for the same reasons.
    const shop = (render, stream) => ['-csp', '-render-timeout', render, '-stream-timeout', stream, '-hard-timeout', '30s', '-reviews-url', gates.url];
    stack = await startStack({
      name: 'streaming',
      rendererEnv: { SSR_DEMO_REVIEWS_URL: gates.url },
      edgeConfig: EDGE_CONFIG,
      shops: { live: shop('10s', '20s'), late: shop('3s', '3s') },
    });
  });
  after(async () => {
    await stack?.close();
    gates?.close();
  });

  const servers = [
    ...builds.map((build) => ({ name: build.name, live: () => stack.edges[build.name].url, late: () => `${stack.edges[build.name].url}/late`, csp: false, goReviews: false })),
    { name: 'shop under a strict CSP', live: () => stack.shops.live.url, late: () => stack.shops.late.url, csp: true, goReviews: true },
  ];
  // A product of its own per server and case: each has its own gate and cache entry.
  for (const [i, server] of servers.entries()) {
    const live = 31 + 10 * i;
    const late = live + 1;

    test(`${server.name}: live, the shell before the reviews, then hydrated`, async () => {
      const url = `${server.live()}/products/${live}/reviews`;
      await withPage(stack.browser, url, { stepMs: STEP_MS, waitUntil: 'commit', init: rememberServerReviews }, async ({ page, response, problems }) => {
        assert.equal(response.status(), 200);
        // The shop's page is partially prerendered: a prelude stored, then resumed.
        assert.match(response.headers()['cache-status'] ?? '', server.goReviews ? /detail=resumed/ : /detail=streamed/);
        await page.waitForSelector(LOADING, { state: 'attached' });
        assert.equal(await page.locator(REVIEWS).count(), 0, 'the reviews arrived before their gate opened');
        gates.open(live);
        await page.waitForLoadState('load');
        await waitForReviews(page);
        await assertAdopted(page, { reviews: true });
        if (server.csp) assertNonced(response.headers(), await response.text());
        await settle(page);
        assertNoProblems(problems, `${server.name} live stream`);
      });
    });

    test(`${server.name}: from the cache, served whole, then hydrated`, async () => {
      const url = `${server.live()}/products/${live}/reviews`;
      // The flight stores the document when its render ends, just after the live response.
      for (const deadline = Date.now() + STEP_MS; ;) {
        const res = await fetch(url);
        await res.arrayBuffer();
        if (/hit/.test(res.headers.get('cache-status') ?? '')) break;
        assert.ok(Date.now() < deadline, `no cached copy within ${STEP_MS} ms`);
        await delay(50);
      }
      await withPage(stack.browser, url, { stepMs: STEP_MS, init: rememberServerReviews }, async ({ page, response, problems }) => {
        assert.match(response.headers()['cache-status'] ?? '', /hit/);
        const body = await response.text();
        // Whole: the stored document, its reviews in it. Without a nonce it goes out as
        // stored (a Content-Length); with one, the nonce is put in as its bytes go out,
        // compressed as they go, so its length is not known before.
        assert.ok(body.includes('data-testid="reviews"') && body.trimEnd().endsWith('</html>'), 'a hit is served whole');
        if (!server.csp) assert.ok(Number(response.headers()['content-length']) > 0, 'a hit without a nonce is served as stored');
        await waitForReviews(page);
        await assertAdopted(page, { reviews: true });
        if (server.csp) assertNonced(response.headers(), body);
        await settle(page);
        assertNoProblems(problems, `${server.name} cache hit`);
      });
    });

    test(`${server.name}: past the stream deadline, the reviews left to the browser`, async () => {
      const url = `${server.late()}/products/${late}/reviews`;
      try {
        await withPage(stack.browser, url, { stepMs: STEP_MS, init: rememberServerReviews }, async ({ page, response, problems }) => {
          const html = await response.text();
          assert.ok(html.includes('c.data="$!"') && !html.includes('data-testid="reviews"'), 'the document was not closed with its boundary left to the browser');
          if (server.csp) assertNonced(response.headers(), html);
          if (server.goReviews) {
            assert.ok(html.includes('data-ssr-deferred="reviews">{"error":'), 'the late deferred value is not marked for the browser');
            await page.waitForSelector(UNAVAILABLE);
            assert.equal(await page.locator(LOADING).count(), 0, 'the loading fallback is still there');
          } else {
            await waitForReviews(page);
          }
          await assertAdopted(page, { reviews: false });
          await settle(page);
          assertNoProblems(problems, `${server.name} past the stream deadline`);
        });
      } finally {
        gates.open(late);
      }
    });
  }

  // The shop's page is partially prerendered (shop/main.go): its shell stored once, each
  // visitor's cart line resumed for that visitor's request, after it, in the same response.
  test('shop under a strict CSP: two visitors, one stored shell, each their own cart line, hydrated', async () => {
    const id = 91;
    gates.open(id);
    const url = `${stack.shops.live.url}/products/${id}/reviews`;
    const visitors = [['ann-7', '2', 'ann-7, 2 of these are in your cart'], ['bob-9', '', 'Not in your cart yet, bob-9']];
    for (const [i, [user, quantity, line]] of visitors.entries()) {
      const cookies = [{ name: 'user', value: user }, ...(quantity ? [{ name: `cart_${id}`, value: quantity }] : [])];
      await withPage(stack.browser, url, { stepMs: STEP_MS, cookies, init: rememberServerReviews }, async ({ page, response, problems }) => {
        assert.match(response.headers()['cache-status'] ?? '', i === 0 ? /fwd=miss.*detail=resumed/ : /hit.*detail=resumed/);
        const html = await response.text();
        assertNonced(response.headers(), html);
        assert.ok(html.includes(`data-testid="cart-line">${line}</p>`), `the document lacks ${user}'s own line`);
        assert.ok(!html.includes(visitors[1 - i][0]), `${user}'s document holds the other visitor's name`);
        await waitForReviews(page);
        const owned = await page.evaluate(`(${OWNED_BY_REACT})(document.querySelector('[data-testid="cart-line"]'))`);
        assert.ok(owned, 'React did not take over the cart line');
        assert.equal(await page.locator('[data-testid="cart-line"]').textContent(), line);
        await assertAdopted(page, { reviews: true });
        await settle(page);
        assertNoProblems(problems, `${user}'s resumed page`);
      });
    }
  });
});
