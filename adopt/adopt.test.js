// Adoption, end to end: what a Go team does to use sidecar-ssr from ITS OWN repository, with
// only the docs (docs/go.md, docs/app-contract.md). In a temporary directory outside this
// tree it makes:
//
//   - a Go module example.com/myshop (testdata/myshop/main.go.txt as main.go) that requires
//     the public package github.com/sidecar-ssr/sidecar-ssr/edge/ssr (a replace to this
//     checkout's edge/), chi and modernc.org/sqlite, with its own SQLite tables of orders and
//     shipments, chi as its router, a strict nonce-based Content-Security-Policy middleware,
//     pages typed with ssr.Typed and ssr.Defer, `go tool ssr-types` (go get -tool) writing
//     their TypeScript, and `pages.Check` before it serves;
//   - a React app (testdata/myshop/package.json, jsconfig.json and src/) that installs the
//     renderer from the tarball `npm pack` makes of renderer/, plus react and react-dom (and
//     typescript and @types/react for its own strict typecheck), builds with the shipped
//     `sidecar-ssr-build` (its own client entry) and runs `npx sidecar-ssr-renderer`.
//
// It proves: path values reach the page through chi, without PageOptions.Route (a); every
// script of the document carries the response's CSP nonce, cached pages included (b); the
// page hydrates in Chromium under that CSP with no console or page error, and a click works
// (c); a rebuild that empties the client directory is linked by new pages within ~3 s and
// every linked asset answers (d); a page name the bundle lacks stops the Go server at
// start, naming it (e); a page that streams, built by the shipped build, sends its deferred
// value in the same response (f); the app's strict jsconfig checks its pages against the Go
// types, deferred values included (g); after a rebuild and a SIGHUP to the renderer, every
// page is the new code's, rendered once (h); the loader's NotFound is a 404 with the
// renderer up and down, pages still answer with it down, and SIGTERM to npx stops it (i).
//
//   make test-adopt                                    # installs what it needs (Chromium)
//   renderer/node_modules/.bin/node --test adopt/      # from the repository root
//
// Needs: renderer/node_modules (the pinned Node 26), app/node_modules (playwright-core), Go,
// /usr/bin/chromium, and the npm registry and Go module proxy (or their caches).
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { assertNoProblems, OWNED_BY_REACT, openPage, parseDocument, settle } from '../app/test/browser.js';
import {
  alive, BUILD_ARGS, BUNDLE_REFRESH_MS, cspNonce, INSTALL_MS, killGroup, linkedAssets, missingPrerequisite, NODE_PATH_ENV,
  poll, READY_MS, RELOAD_MS, reserveOnce, run, startProcess, startShop, STEP_MS, stopProcess, stopShop, tail, waitExit,
  withLogsOf,
} from './harness.js';

/** The router the team picked, at the version it got. */
const CHI = 'github.com/go-chi/chi/v5 v5.5.0';

test('prerequisites: Chromium, the pinned Node, playwright-core, the renderer package\'s bins', () => {
  const missing = missingPrerequisite();
  if (missing) assert.fail(missing);
});

describe('a Go team adopts sidecar-ssr from its own repository', { timeout: 300_000 }, () => {
  let tmpDir;
  let appDir;
  let socket;
  /** @type {ReturnType<typeof startProcess>} */
  let renderer;
  /** @type {ReturnType<typeof startProcess>} */
  let server;
  let baseURL;
  let manifest; // the first build's
  let rendererPid;
  let rendererMetrics;
  let browserLaunch;
  let browser;

  /** Runs a step; a failure carries the last lines of the renderer and the Go server. */
  const withLogs = withLogsOf(() => [renderer, server]);

  before(withLogs(async () => {
    const missing = missingPrerequisite();
    if (missing) throw new Error(missing);
    ({ tmpDir, appDir, socket, renderer, server, baseURL, manifest, rendererPid, rendererMetrics, browserLaunch } =
      await startShop({ mainFile: 'myshop/main.go.txt', requires: [CHI] }));
    browser = await browserLaunch;
  }), { timeout: 240_000 });

  after(() => stopShop({ browserLaunch, server, renderer, rendererPid, tmpDir }));

  test('a. /orders/1 is server-rendered, its path value reaching the page without Route', withLogs(async () => {
    const response = await fetch(`${baseURL}/orders/1`);
    const html = await response.text();
    assert.equal(response.status, 200, html.slice(0, 2000));
    assert.equal(response.headers.get('x-ssr-fallback'), null, 'the page fell back instead of being server-rendered');
    const { rootHTML, data } = parseDocument(html);
    assert.notEqual(rootHTML.trim(), '', '#root is empty');
    assert.match(rootHTML, /teapot/, 'the order\'s item is not in the server markup');
    assert.equal(data.page, 'order');
    assert.deepEqual(data.params, { id: '1' }, '__SSR_DATA__ params');
    assert.deepEqual(data.props, { order: { id: 1, item: 'teapot' } }, '__SSR_DATA__ props (the Go loader\'s)');
  }));

  test('b. every <script> carries the nonce of its own response\'s CSP, cached pages included', withLogs(async () => {
    const nonces = [];
    // /orders/1 twice (cache hits after a.), and an unknown order (a 404, rendered now).
    for (const [url, status] of [['/orders/1', 200], ['/orders/1', 200], ['/orders/997', 404]]) {
      const response = await fetch(baseURL + url);
      const html = await response.text();
      assert.equal(response.status, status, `${url}: ${html.slice(0, 2000)}`);
      const nonce = cspNonce(response);
      nonces.push(nonce);
      const { scripts } = parseDocument(html);
      assert.ok(scripts.length >= 2, `${url}: expected the client script and __SSR_DATA__, got ${scripts.join(' ')}`);
      for (const tag of scripts) {
        assert.ok(tag.includes(` nonce="${nonce}"`), `${url}: ${tag} does not carry nonce="${nonce}" (the CSP header's)`);
      }
    }
    assert.notEqual(nonces[0], nonces[1], 'two responses got the same nonce');
  }));

  test('c. the page hydrates in Chromium under the strict CSP, with no error, and a click works', withLogs(async () => {
    const { context, page, response, problems } = await openPage(browser, `${baseURL}/orders/1`, { stepMs: STEP_MS });
    try {
      assert.equal(response.status(), 200);
      assert.equal(response.headers()['x-ssr-fallback'], undefined, 'the page fell back to the client-side render');
      // Polled with page.evaluate (DevTools' evaluation, which the page's CSP does not
      // govern), not waitForFunction, whose predicate the strict CSP could refuse to eval.
      const button = '[data-testid="click"]';
      await poll(
        () => page.evaluate(`(${OWNED_BY_REACT})(document.querySelector('${button}'))`),
        STEP_MS,
        () => `React never took over the button (not hydrated); the browser reported:\n${problems.join('\n') || '(nothing)'}\n`,
      );
      assert.ok(
        await page.evaluate(`(${OWNED_BY_REACT})(window.__firstRootChild) && window.__firstRootChild === document.getElementById('root').firstElementChild`),
        'the server-rendered markup was replaced instead of hydrated',
      );
      const count = page.locator('[data-testid="count"]');
      assert.equal(await count.textContent(), '0');
      for (const want of ['1', '2']) {
        await page.locator(button).click();
        await poll(async () => (await count.textContent()) === want, STEP_MS, () => `the counter did not become ${want} after a click`);
      }
      await settle(page);
      assertNoProblems(problems, '/orders/1');
    } finally {
      await context.close();
    }
  }));

  test('c2. the team\'s own template page has its island server-rendered, hydrated under the CSP, one renderer call', withLogs(async () => {
    const islandCalls = async () => Number((await (await fetch(rendererMetrics)).text()).match(/^renderer_island_calls_total (\S+)$/m)?.[1]);
    const calls = await islandCalls();
    const { context, page, response, problems } = await openPage(browser, `${baseURL}/orders/1/receipt`, { stepMs: STEP_MS });
    try {
      assert.equal(response.status(), 200);
      assert.equal(await islandCalls() - calls, 1, 'one renderer call for the page');
      const html = await response.text();
      assert.match(html, /<title>Receipt #1<\/title>/, 'the team\'s own head');
      assert.match(html, /<div data-ssr-island="Stock"><p class="stock" data-testid="stock">3 more teapot in stock/, 'the island server-rendered in place');
      const nonce = response.headers()['content-security-policy']?.match(/'nonce-([^']+)'/)?.[1];
      assert.ok(nonce, 'the response has no CSP nonce');
      for (const tag of html.match(/<script\b[^>]*>/g) ?? []) {
        if (!tag.includes('type="application/json"')) assert.ok(tag.includes(`nonce="${nonce}"`), `${tag} lacks the response's nonce`);
      }
      await reserveOnce(page, problems);
      await settle(page);
      assertNoProblems(problems, '/orders/1/receipt');
    } finally {
      await context.close();
    }
  }));

  test('d. a rebuild that empties the client directory is linked by new pages, and every asset it links answers', withLogs(async () => {
    const cssFile = path.join(appDir, 'src', 'styles.css');
    writeFileSync(cssFile, readFileSync(cssFile, 'utf8').replace('#1a5fb4', '#c01c28'));
    rmSync(path.join(appDir, 'dist', 'client'), { recursive: true, force: true });
    await run('sidecar-ssr-build (rebuild)', 'npx', BUILD_ARGS, { cwd: appDir, env: NODE_PATH_ENV, ms: INSTALL_MS });
    const rebuilt = JSON.parse(readFileSync(path.join(appDir, 'dist', 'client', 'manifest.json'), 'utf8'));
    assert.notEqual(rebuilt.buildId, manifest.buildId, 'the rebuild kept the buildId');
    const want = [...rebuilt.scripts, ...rebuilt.styles];
    assert.ok(rebuilt.styles.length > 0, 'the build has no stylesheet (src/pages.jsx imports one)');

    const since = Date.now();
    let html;
    let last = '';
    await poll(async () => {
      const response = await fetch(`${baseURL}/orders/2`);
      html = await response.text();
      last = `status ${response.status}, links ${linkedAssets(html).join(' ')}`;
      return response.status === 200 && want.every((url) => linkedAssets(html).includes(url));
    }, RELOAD_MS, () => `/orders/2 did not link the new build's ${want.join(' ')} (last: ${last})`);
    process.stderr.write(`# new build linked after ${Date.now() - since} ms\n`);

    const linked = linkedAssets(html);
    assert.ok(linked.length >= 2, `expected a script and a stylesheet, got ${linked.join(' ')}`);
    for (const url of linked) {
      const response = await fetch(baseURL + url);
      await response.arrayBuffer();
      assert.equal(response.status, 200, `${url}, linked by /orders/2, answers ${response.status}`);
    }
  }));

  test('e. a page name the bundle lacks stops the Go server at start, naming it', withLogs(async () => {
    const refused = startProcess('myshop (extra page)', path.join(appDir, 'myshop'), [], {
      cwd: appDir,
      env: { MYSHOP_RENDERER_SOCKET: socket, MYSHOP_EXTRA_PAGE: 'does-not-exist' },
    });
    try {
      const exited = await waitExit(refused, 30_000);
      assert.notEqual(exited.code, 0, `it exited ${JSON.stringify(exited)}\n${tail(refused)}`);
      assert.match(refused.stderr, /does-not-exist/, `stderr does not name the page\n${tail(refused)}`);
      assert.doesNotMatch(refused.stdout, /listening on/, 'it served before refusing');
      process.stderr.write(`# refused at start: ${refused.stderr.trim().split('\n').at(-1)}\n`);
    } finally {
      killGroup(refused.child, 'SIGKILL');
    }
  }));

  test('f. the tracking page streams, built by the shipped build: its deferred shipment comes in the same response', withLogs(async () => {
    const response = await fetch(`${baseURL}/orders/1/tracking`);
    const html = await response.text();
    assert.equal(response.status, 200, html.slice(0, 2000));
    assert.equal(response.headers.get('x-ssr-fallback'), null, `the streamed page fell back: ${html.slice(0, 2000)}`);
    assert.match(html, /Tracking order #1/, 'the shell is not server-rendered');
    assert.match(html, /Parcelforce delivers it on Tuesday/, 'the deferred shipment did not arrive in the response');
    // React's own inline scripts, which move the boundary into place, included.
    const nonce = cspNonce(response);
    const scripts = html.match(/<script\b[^>]*>/g) ?? [];
    assert.ok(scripts.length >= 4, `expected the client script, React's, the deferred value and __SSR_DATA__, got ${scripts.join(' ')}`);
    for (const tag of scripts) {
      assert.ok(tag.includes(` nonce="${nonce}"`), `${tag} does not carry nonce="${nonce}" (the CSP header's)`);
    }
  }));

  test('g. the team\'s strict jsconfig checks its pages against the Go types, deferred values included', withLogs(async () => {
    const generated = readFileSync(path.join(appDir, 'src', 'props.gen.d.ts'), 'utf8');
    assert.match(generated, /shipment: Shipment;/, `go generate did not type the deferred shipment:\n${generated}`);
    const tsc = ['--no', '--', 'tsc', '-p', 'jsconfig.json'];
    await run('tsc (the team\'s jsconfig)', 'npx', tsc, { cwd: appDir, env: NODE_PATH_ENV, ms: INSTALL_MS });

    // A field Go does not send fails it, at the page that reads it.
    const pagesFile = path.join(appDir, 'src', 'pages.jsx');
    const pages = readFileSync(pagesFile, 'utf8');
    assert.ok(pages.includes('const { carrier, eta } = use(shipment);'), 'the tracking page reads the shipment as the test expects');
    writeFileSync(pagesFile, pages.replace('const { carrier, eta } = use(shipment);', 'const { carrier, eta, courier } = use(shipment);'));
    try {
      const failed = startProcess('tsc (a field Go does not send)', 'npx', tsc, { cwd: appDir, env: NODE_PATH_ENV });
      const exited = await waitExit(failed, INSTALL_MS);
      assert.notEqual(exited.code, 0, `tsc passed a page reading a field Go does not send\n${tail(failed)}`);
      assert.match(failed.output, /src\/pages\.jsx\(\d+,\d+\): error TS2339: Property 'courier' does not exist on type 'Shipment'/, tail(failed));
    } finally {
      writeFileSync(pagesFile, pages);
    }
  }));

  test('h. after a rebuild and a SIGHUP to the renderer, every page is the new code\'s, rendered once', withLogs(async () => {
    const pagesFile = path.join(appDir, 'src', 'pages.jsx');
    const pages = readFileSync(pagesFile, 'utf8');
    assert.ok(pages.includes('<h1>{`Order #${order.id}`}</h1>'), 'the order page\'s heading is as the test expects');
    writeFileSync(pagesFile, pages.replace('<h1>{`Order #${order.id}`}</h1>', '<h1>{`Your order #${order.id}`}</h1>'));
    await run('sidecar-ssr-build (new code)', 'npx', BUILD_ARGS, { cwd: appDir, env: NODE_PATH_ENV, ms: INSTALL_MS });
    const rebuilt = JSON.parse(readFileSync(path.join(appDir, 'dist', 'client', 'manifest.json'), 'utf8'));
    const logged = renderer.output.length;
    process.kill(rendererPid, 'SIGHUP');
    await poll(() => renderer.output.slice(logged).includes('reloaded: every worker runs the bundle'), READY_MS, () => 'the renderer did not reload');
    // The new client build too, which the Go side reads about every second (another page
    // shows when it has).
    await poll(async () => {
      const html = await (await fetch(`${baseURL}/orders/2`)).text();
      return rebuilt.scripts.every((url) => linkedAssets(html).includes(url));
    }, RELOAD_MS, () => `/orders/2 did not link the new build's ${rebuilt.scripts.join(' ')}`);

    // The first request renders with the new code; then every one is that copy, also once
    // the Go server has asked the renderer for its bundle again (every 15 s).
    const since = Date.now();
    const statuses = [];
    for (let i = 0; Date.now() - since < BUNDLE_REFRESH_MS; i++) {
      const response = await fetch(`${baseURL}/orders/1`);
      const html = await response.text();
      const status = response.headers.get('cache-status') ?? '';
      statuses.push(status);
      assert.equal(response.status, 200, html.slice(0, 2000));
      assert.match(parseDocument(html).rootHTML, /Your order #1/, `request ${i + 1} after the reload served the old code's page (Cache-Status ${status})`);
      if (i > 0) assert.match(status, /; hit/, `request ${i + 1} after the reload was rendered again: ${statuses.join(' | ')}`);
      await delay(500);
    }
    process.stderr.write(`# after the reload: ${statuses.length} requests over ${Date.now() - since} ms, the first ${statuses[0]}\n`);
  }));

  test('i. an unknown order is a 404 with the renderer up and down; orders still answer with it down; SIGTERM to npx stops it', withLogs(async () => {
    let response = await fetch(`${baseURL}/orders/999`);
    let html = await response.text();
    assert.equal(response.status, 404, html.slice(0, 2000));
    assert.equal(response.headers.get('x-ssr-fallback'), null, 'the not-found page fell back with the renderer up');
    let doc = parseDocument(html);
    assert.equal(doc.data.page, 'not-found');
    assert.match(doc.rootHTML, /No such order/, 'the not-found page is not server-rendered');

    await stopProcess(renderer, 'SIGTERM', 30_000);
    assert.ok(renderer.exited, 'npx did not stop');
    await poll(() => !alive(rendererPid), 30_000, () => 'the renderer still runs after SIGTERM to npx');

    response = await fetch(`${baseURL}/orders/998`);
    html = await response.text();
    assert.equal(response.status, 404, `/orders/998 with the renderer down: ${response.headers.get('x-ssr-fallback')}\n${html.slice(0, 2000)}`);
    doc = parseDocument(html);
    assert.equal(doc.data.page, 'not-found', '/orders/998 with the renderer down: the document is not the not-found page');
    process.stderr.write(`# /orders/998 with the renderer down: 404, X-SSR-Fallback ${response.headers.get('x-ssr-fallback')}\n`);

    // Never requested before: no copy in the cache, so the loader runs and the render cannot.
    // (Not /orders/2: step h asked for it after the rebuild, and whether that copy's key is
    // still the current one depends on when the Go server last asked for the bundle.) The
    // fallback document carries the loader's props.
    response = await fetch(`${baseURL}/orders/3`);
    html = await response.text();
    assert.equal(response.status, 200, `/orders/3 with the renderer down: ${html.slice(0, 2000)}`);
    assert.notEqual(response.headers.get('x-ssr-fallback'), null, '/orders/3 was served from a copy, not by its loader');
    doc = parseDocument(html);
    assert.deepEqual(doc.data.props, { order: { id: 3, item: 'mug' } }, 'the fallback lacks the loader\'s props');
    process.stderr.write(`# /orders/3 with the renderer down: X-SSR-Fallback ${response.headers.get('x-ssr-fallback')}\n`);
  }));
});
