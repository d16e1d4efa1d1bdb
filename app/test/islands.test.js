// Islands in the shop's own Go template (/about: shop/about.go), in a real browser, against
// the real renderer and the demo shop with a strict Content-Security-Policy (-csp) and its
// Flaky island failing on the server (-fail-island). The page passes when its islands came
// from one renderer call, the server-rendered ones hydrate (React owns the server's nodes, a
// click works), the failing one is rendered by the browser from its props, and the browser
// reports no console error (a CSP violation is one). Then the stored island comes from the
// cache while the visitor's own renders again, and with the renderer stopped the page is
// still the shop's: the stored island from the cache, the others rendered by the browser.
//
//   make test-browser
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertNoProblems, OWNED_BY_REACT, settle, withPage } from './browser.js';
import { startStack, stopProcess, testPrerequisites, waitLog } from './stack.js';

const STEP_MS = 10_000;
const ISLANDS = ['FeaturedProducts', 'CartSummary', 'Flaky'];

/** Each island's root markup, by name, from a page's HTML. */
function islandRoots(html) {
  const roots = {};
  for (const m of html.matchAll(/<div data-ssr-island="([^"]+)">([\s\S]*?)<\/div><script type="application\/json" data-ssr-island-props>([^<]*)<\/script>/g)) {
    roots[m[1]] = { html: m[2], props: JSON.parse(m[3]) };
  }
  return roots;
}

/** The sum of a metric's samples whose line contains label. */
async function metric(url, name, label = '') {
  const text = await (await fetch(url)).text();
  return text.split('\n').filter((l) => (l.startsWith(`${name} `) || l.startsWith(`${name}{`)) && l.includes(label))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** Waits until every island's markup is React's and the cart's button counts a click. */
async function assertIslandsLive(page) {
  for (const testid of ['featured', 'cart', 'flaky']) {
    await page.waitForFunction(`(${OWNED_BY_REACT})(document.querySelector('[data-testid="${testid}"]'))`, null, { timeout: STEP_MS })
      .catch(() => assert.fail(`island ${testid} never came to life`));
  }
  const count = page.locator('[data-testid="cart-count"]');
  const was = Number(await count.textContent());
  await page.locator('[data-testid="cart-add"]').click();
  await page.waitForFunction((w) => document.querySelector('[data-testid="cart-count"]')?.textContent === w, String(was + 1), { timeout: STEP_MS })
    .catch(async () => assert.fail(`the cart did not count the click (it reads ${await count.textContent()})`));
}

testPrerequisites();

describe('islands in a Go template, in Chromium under a strict CSP', { timeout: 180_000 }, () => {
  /** @type {import('./stack.js').Stack} */
  let stack;
  let shop = '';
  let renderer = '';
  before(async () => {
    stack = await startStack({ name: 'islands', shops: { islands: ['-csp', '-fail-island', '-render-timeout', '2s'] } });
    shop = stack.shops.islands.url;
    renderer = `http://${(await waitLog(stack.renderer, { msg: 'listening', listener: 'http' })).address}/metrics`;
  });
  after(() => stack?.close());

  test('/about: islands from one renderer call, hydrated, the failing one rendered by the browser', async () => {
    const calls = await metric(renderer, 'renderer_island_calls_total');
    await withPage(stack.browser, `${shop}/about`, {}, async ({ page, response, problems }) => {
      assert.equal(response.status(), 200);
      assert.match(response.headers()['content-security-policy'] ?? '', /script-src 'nonce-/);
      const html = await response.text();
      assert.match(html, /<title>About The Demo Shop<\/title>/, 'the shop\'s own head');
      const roots = islandRoots(html);
      assert.deepEqual(Object.keys(roots), ISLANDS);
      assert.match(roots.FeaturedProducts.html, /data-testid="featured"/, 'FeaturedProducts server-rendered');
      assert.match(roots.CartSummary.html, /guest/, 'CartSummary server-rendered with the session');
      assert.equal(roots.Flaky.html, '', 'Flaky, which throws on the server, is left to the browser');
      assert.equal(roots.Flaky.props.fail, true);
      assert.equal(await metric(renderer, 'renderer_island_calls_total') - calls, 1, 'one renderer call for the page');

      await assertIslandsLive(page);
      assert.ok(await page.getByText('Hand-made in small batches.').isVisible(), 'the browser rendered Flaky from its props');
      await settle(page);
      assertNoProblems(problems, '/about');
    });
  });

  test('the stored island comes from the cache, the visitor\'s own renders again', async () => {
    await fetch(`${shop}/about`); // stored: FeaturedProducts
    const renders = (island) => metric(renderer, 'renderer_renders_total', `page="island:${island}"`);
    const [featured, cart] = [await renders('FeaturedProducts'), await renders('CartSummary')];
    await fetch(`${shop}/about`);
    assert.equal(await renders('FeaturedProducts') - featured, 0, 'FeaturedProducts came from the cache');
    assert.equal(await renders('CartSummary') - cart, 1, 'CartSummary, per visitor, rendered again');
  });

  test('the renderer stopped: /about is still 200, the stored island served, the others rendered by the browser', async () => {
    await stopProcess(stack.renderer);
    await withPage(stack.browser, `${shop}/about`, {}, async ({ page, response, problems }) => {
      assert.equal(response.status(), 200);
      const roots = islandRoots(await response.text());
      assert.notEqual(roots.FeaturedProducts?.html ?? '', '', 'FeaturedProducts, stored, is served from the cache');
      for (const name of ['CartSummary', 'Flaky']) assert.equal(roots[name]?.html, '', `${name} is left to the browser`);
      await assertIslandsLive(page);
      await settle(page);
      assertNoProblems(problems, '/about without a renderer');
    });
  });
});
