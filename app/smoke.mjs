// Smoke test of a built server bundle, rendered by the renderer's own renderPage (what a
// worker runs; docs/app-contract.md): for each case the page's load(), then the component
// and head, and print the sizes. Exits non-zero if anything fails.
//
//   node smoke.mjs                                          the demo: dist/server/server.js
//   node smoke.mjs ../renderer/test/fixtures/dist/server.js the fixture (harmless pages only)
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { renderPage } from '../renderer/src/worker/render-page.js';

const appDir = path.dirname(fileURLToPath(import.meta.url));
const bundlePath = path.resolve(process.argv[2] ?? path.join(appDir, 'dist', 'server', 'server.js'));
const app = await import(pathToFileURL(bundlePath).href);

/**
 * Renders one request with the renderer's own function (what a worker runs), so this test
 * cannot drift from it.
 */
function render({ page, island, url, params = {}, props }) {
  const propsJson = props === undefined ? undefined : new TextEncoder().encode(JSON.stringify(props));
  return renderPage(app, { page, ...(island !== undefined && { island }), url, params, variants: {}, propsJson });
}

const demoCases = [
  { page: 'home', url: '/' },
  { page: 'home', url: '/?page=10' },
  { page: 'product', url: '/products/1', params: { id: '1' } },
  { page: 'product', url: '/products/1000', params: { id: '1000' } },
  { page: 'product', url: '/products/1001', params: { id: '1001' }, want: 404 },
  { page: 'product', url: '/products/abc', params: { id: 'abc' }, want: 404 },
  { page: 'not-found', url: '/nope' },
];
const fixtureCases = [
  { page: 'sleep', url: '/sleep?ms=20', wantHTML: 'slept <!-- -->20<!-- --> ms' },
  { page: 'echo', url: '/echo', props: { hello: 'world' }, wantHTML: '{&quot;hello&quot;:&quot;world&quot;}' },
  { page: 'xss', url: '/xss', wantHTML: '&lt;/script&gt;' },
  { page: 'redirect', url: '/redirect', want: 302 },
  { page: 'status', url: '/status?code=418', want: 418 },
  { page: 'leaks', url: '/leaks', wantHTML: 'retained ~' },
  { page: 'throws', url: '/throws', wantError: 'fixture: page threw on purpose' },
  { page: 'throws-in-load', url: '/throws-in-load', wantError: 'fixture: load threw on purpose' },
  // loops and oom are left out: they never return (or take the process down).
];
const cases = 'leaks' in app.pages ? [...demoCases, ...fixtureCases] : demoCases;

let failed = 0;
let passed = 0;
console.log(`bundle ${path.relative(process.cwd(), bundlePath)}, warmup ${app.warmup.length} renders`);
for (const c of [...app.warmup.map((w) => ({ ...w, warmup: true })), ...cases]) {
  const label = `${c.warmup ? 'warmup ' : ''}${c.island === undefined ? `${c.page} ${c.url}` : `island ${c.island}`}`.padEnd(36);
  try {
    const started = performance.now();
    const r = await render(c);
    const ms = (performance.now() - started).toFixed(1);
    const problems = [];
    if (c.wantError) problems.push(`expected an error: ${c.wantError}`);
    if ((c.want ?? 200) !== r.status) {
      problems.push(`status ${r.status}, want ${c.want ?? 200}`);
    }
    const location = r.headers.find((h) => h.name === 'Location')?.value;
    if (c.wantHTML && !r.html.includes(c.wantHTML)) problems.push(`html lacks ${c.wantHTML}`);
    if (location === undefined && r.html.length === 0) problems.push('empty html');
    if (location === undefined && c.island === undefined && !r.head.startsWith('<title>')) problems.push('head has no <title>');
    const sizes = location !== undefined
      ? `location ${location}`
      : `html ${String(r.html.length).padStart(7)} B  props ${String(r.propsJson.length).padStart(6)} B  head ${String(r.head.length).padStart(4)} B`;
    console.log(`${problems.length ? 'FAIL' : 'ok  '} ${label} ${r.status}  ${sizes}  ${ms} ms`);
    for (const p of problems) console.log(`     ${p}`);
    if (problems.length) failed++;
    else passed++;
  } catch (error) {
    const ok = c.wantError && error.message === c.wantError;
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${label} threw: ${error.message}`);
    if (ok) passed++;
    else failed++;
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed ? 1 : 0;
