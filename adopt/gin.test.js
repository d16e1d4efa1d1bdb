// Adoption on Gin: a Go team whose router is Gin (v1.12.0) and whose pages are its own
// html/template files rendered by Gin (c.HTML), from its own repository, with only the docs
// (docs/go.md, "Other routers"). In a temporary directory outside this tree: a Go module
// (testdata/ginshop/main.go.txt as main.go, and its templates/) on Gin, SQLite and the
// public package, and the React app of testdata/myshop with the renderer from its npm pack
// tarball, run through npx (harness.js, startShop).
//
// It proves: a page answers through Gin with its path value (a); the receipt, Gin's own
// template, has its stored and its per-visitor island server-rendered, compressed, every
// script under the response's CSP nonce given by a Gin middleware, and hydrates in
// Chromium with no error (b); a streamed page with a typed deferred value streams through
// Gin's writer (c); through a rebuild and a SIGHUP to the renderer, no response of 100 and
// more mixes a client build with another bundle's HTML (c2); with the renderer down, pages
// and the receipt still answer, the page with the loader's head, the islands left to the
// browser (d); SIGTERM stops the server (e).
//
//   make test-adopt
//   renderer/node_modules/.bin/node --test adopt/gin.test.js   # from the repository root
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { openPage } from '../app/test/browser.js';
import {
  BUILD_ARGS, cspNonce, INSTALL_MS, linkedAssets, missingPrerequisite, NODE_PATH_ENV, poll, READY_MS, reserveOnce, run,
  startShop, STEP_MS, stopShop, waitExit, withLogsOf,
} from './harness.js';

/** The router the team picked, at the version it got. */
const GIN = 'github.com/gin-gonic/gin v1.12.0';

describe('a Go team on Gin adopts sidecar-ssr from its own repository', { timeout: 300_000 }, () => {
  /** @type {Awaited<ReturnType<typeof startShop>>} */
  let shop;
  let browser;

  /** Runs a step; a failure carries the last lines of the renderer and the Go server. */
  const withLogs = withLogsOf(() => [shop?.renderer, shop?.server]);

  before(withLogs(async () => {
    const missing = missingPrerequisite();
    if (missing) throw new Error(missing);
    shop = await startShop({ mainFile: 'ginshop/main.go.txt', requires: [GIN], files: { templates: 'ginshop/templates' } });
    browser = await shop.browserLaunch;
  }), { timeout: 240_000 });

  after(() => stopShop(shop));

  test('a. /orders/1 answers through Gin, server-rendered, its path value from Gin\'s parameter', withLogs(async () => {
    const response = await fetch(`${shop.baseURL}/orders/1`);
    const html = await response.text();
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('x-ssr-fallback'), null, 'a fallback');
    assert.match(html, /<h1>Order #1<\/h1>/, 'the page is not server-rendered');
    assert.match(html, /<meta name="order" content="1">/, 'the loader\'s head');
  }));

  test('b. the receipt, Gin\'s own template, has both islands server-rendered, compressed, under the nonce, and hydrates', withLogs(async () => {
    const islandCalls = async () => Number((await (await fetch(shop.rendererMetrics)).text()).match(/^renderer_island_calls_total (\S+)$/m)?.[1]);
    const plain = await fetch(`${shop.baseURL}/orders/1/receipt`, { headers: { cookie: 'user=ann', 'accept-encoding': 'gzip' } });
    const html = await plain.text();
    assert.equal(plain.status, 200);
    assert.equal(plain.headers.get('content-encoding'), 'gzip', 'Gin\'s HTML is not compressed (Options.CompressHTML)');
    assert.match(html, /<title>Receipt #1<\/title>/, 'the team\'s own head');
    assert.match(html, /<div data-ssr-island="Greeting"><p class="greeting" data-testid="greeting">Hello, ann!<\/p><\/div>/, 'the visitor\'s island');
    assert.match(html, /<div data-ssr-island="Stock"><p class="stock" data-testid="stock">3 more teapot in stock/, 'the stored island');
    assert.doesNotMatch(html, /ssr-island:/, 'a marker reached the browser');
    const nonce = cspNonce(plain);
    for (const tag of html.match(/<script\b[^>]*>/g) ?? []) {
      if (!tag.includes('type="application/json"')) assert.ok(tag.includes(`nonce="${nonce}"`), `${tag} lacks the response's nonce`);
    }
    // Another visitor: Stock comes from the cache, Greeting is rendered: one call, for it.
    const calls = await islandCalls();
    const bob = await (await fetch(`${shop.baseURL}/orders/1/receipt`, { headers: { cookie: 'user=bob' } })).text();
    assert.match(bob, /Hello, bob!/);
    assert.equal(await islandCalls() - calls, 1, 'one renderer call for the second visitor');

    const { context, page, response, problems } = await openPage(browser, `${shop.baseURL}/orders/1/receipt`, { stepMs: STEP_MS });
    try {
      assert.equal(response.status(), 200);
      await reserveOnce(page, problems);
      assert.deepEqual(problems, [], 'the browser reported problems');
    } finally {
      await context.close();
    }
  }));

  test('c. the tracking page streams through Gin\'s writer, its typed deferred shipment in the same response', withLogs(async () => {
    const response = await fetch(`${shop.baseURL}/orders/1/tracking`);
    const html = await response.text();
    assert.equal(response.status, 200);
    assert.match(response.headers.get('cache-status') ?? '', /detail=streamed/, 'not streamed');
    assert.match(html, /data-ssr-deferred="shipment">\{"value":\{"carrier":"Parcelforce","eta":"Tuesday"\}\}/);
    assert.doesNotMatch(shop.server.output, /flush did not reach the connection/, 'a flush was lost in Gin');
  }));

  test('c2. through a rebuild and a reload, no response mixes a client build with another bundle\'s HTML', withLogs(async () => {
    const pagesFile = path.join(shop.appDir, 'src', 'pages.jsx');
    writeFileSync(pagesFile, readFileSync(pagesFile, 'utf8').replace('<h1>{`Order #${order.id}`}</h1>', '<h1>{`Your order #${order.id}`}</h1>'));
    await run('sidecar-ssr-build (rebuild)', 'npx', BUILD_ARGS, { cwd: shop.appDir, env: NODE_PATH_ENV, ms: INSTALL_MS });
    const rebuilt = JSON.parse(readFileSync(path.join(shop.appDir, 'dist', 'client', 'manifest.json'), 'utf8'));
    assert.notEqual(rebuilt.buildId, shop.manifest.buildId, 'the rebuild kept the buildId');
    const [before, after] = [shop.manifest.scripts[0], rebuilt.scripts[0]];
    const mixed = [];
    let newer = 0;
    const look = async (i) => {
      // Another order each time past the first hundred: a page rendered now, not stored.
      const html = await (await fetch(`${shop.baseURL}/orders/${1 + (i % 3)}`)).text();
      const isNew = html.includes('Your order #');
      if (isNew) newer++;
      if (!html.includes(`src="${isNew ? after : before}"`)) mixed.push(`${isNew ? 'new' : 'old'} HTML linking ${linkedAssets(html).join(' ')}`);
      return isNew;
    };
    for (let i = 0; i < 100; i++) {
      if (i === 10) process.kill(shop.rendererPid, 'SIGHUP');
      await look(i);
    }
    await poll(() => look(0), READY_MS, () => 'pages of the new bundle never came');
    assert.deepEqual(mixed, [], `${mixed.length} of the responses mixed builds`);
    process.stderr.write(`# ${newer} responses of the new bundle, the rest of the old, none mixed\n`);
  }));

  test('d. with the renderer down, pages and the receipt still answer: the loader\'s head, the islands left to the browser', withLogs(async () => {
    process.kill(shop.rendererPid, 'SIGKILL');
    await poll(async () => {
      const response = await fetch(`${shop.baseURL}/orders/2`);
      return response.status === 200 && response.headers.get('x-ssr-fallback') !== null;
    }, STEP_MS, () => 'pages did not fall back with the renderer down');
    const order = await (await fetch(`${shop.baseURL}/orders/2`)).text();
    assert.match(order, /<meta name="order" content="2">/, 'the fallback lost the loader\'s head');
    const receipt = await fetch(`${shop.baseURL}/orders/2/receipt`, { headers: { cookie: 'user=cy' } });
    const html = await receipt.text();
    assert.equal(receipt.status, 200);
    assert.match(html, /<div data-ssr-island="Greeting"><\/div><script type="application\/json" data-ssr-island-props>\{"name":"cy"\}<\/script>/,
      'the visitor\'s island not left to the browser with its props');
  }));

  test('e. SIGTERM stops the Gin server', withLogs(async () => {
    shop.server.child.kill('SIGTERM');
    const exit = await waitExit(shop.server, 15_000);
    assert.deepEqual(exit, { code: 0, signal: null });
  }));
});
