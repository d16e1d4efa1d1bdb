// What a worker's own code spends on ten islands against the same ten components as one page,
// on this thread alone (no pool, no main thread, no Go): renderPage, then the reply's encoding,
// as the worker runs them. The fixture bundle (`npm run build:fixture` in app/) and
// BenchmarkIslands' islands: FeaturedProducts with three products each. µs per page, two rounds.
//   node bench/islands-worker.mjs [PAGES]
import { performance } from 'node:perf_hooks';
import { renderPage } from '../renderer/src/worker/render-page.js';
import { encodeIslandsResponse, encodeRenderResponse, prepareRenderResponse } from '../renderer/src/threads/wire.js';

const pages = Number(process.argv[2] ?? 5000);
const bundle = await import('../renderer/test/fixtures/dist/server.js');
const json = (/** @type {unknown} */ value) => new TextEncoder().encode(JSON.stringify(value));
const islands = Array.from({ length: 10 }, (_, i) => ({
  name: 'FeaturedProducts',
  props: { products: [1, 2, 3].map((j) => ({ id: 3 * i + j, name: `Product ${3 * i + j}`, price: `${3 * i + j}.99 EUR` })) },
}));
const islandTasks = islands.map(({ name, props }) => ({ page: `island:${name}`, island: name, url: '/', params: {}, variants: {}, propsJson: json(props) }));
const pageTask = { page: 'islands-page', url: '/', params: {}, variants: {}, propsJson: json({ islands }) };
const timing = { queueUs: 1, loadUs: 1, renderUs: 1, workerUs: 1, workerId: 1, heapUsedBytes: 1, heapLimitBytes: 1, externalBytes: 1 };
const fields = (/** @type {any} */ r) => ({ head: r.head, status: r.status, headers: r.headers, cache: r.cache, page: r.page, bundleId: 'bench', timing });

/** @type {[string, () => Promise<unknown>][]} */
const cases = [
  ['10 islands: render', async () => { for (const task of islandTasks) await renderPage(bundle, task); }],
  ['10 islands: render + encode', async () => {
    const outcomes = [];
    for (const task of islandTasks) {
      const r = await renderPage(bundle, task);
      outcomes.push(prepareRenderResponse(r.html, r.propsJson, fields(r), Infinity));
    }
    encodeIslandsResponse(outcomes, Infinity);
  }],
  ['one page: render', () => renderPage(bundle, pageTask)],
  ['one page: render + encode', async () => {
    const r = await renderPage(bundle, pageTask);
    encodeRenderResponse(r.html, r.propsJson, fields(r), Infinity);
  }],
];
for (let round = 1; round <= 2; round++) {
  for (const [name, run] of cases) {
    for (let i = 0; i < pages / 2; i++) await run();
    const began = performance.now();
    for (let i = 0; i < pages; i++) await run();
    console.log(`round ${round}  ${name.padEnd(28)} ${((performance.now() - began) / pages * 1000).toFixed(1)} µs`);
  }
}
