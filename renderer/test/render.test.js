// Successful renders over the real gRPC path: body, head, status, headers,
// props and timing, against the fixture bundle's demo pages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { render, startRenderer } from './helpers.js';
import { RENDERER_TIME_TRAILER } from '../src/serve/render-call.js';

test('renders pages over gRPC', async (t) => {
  const { client } = await startRenderer(t);

  await t.test('home: product markup, props JSON, 200', async () => {
    const { response, error } = await render(client, { page: 'home', url: '/' });
    assert.equal(error, undefined);
    assert.ok(Buffer.isBuffer(response?.html));
    const html = response?.html.toString('utf8');
    assert.match(html, /<article class="card" data-product-id="1"/);
    assert.equal(response?.status, 200);
    assert.equal(response?.page, 'home');
    assert.match(response?.head, /^<title>[^<]+<\/title>/);
    const props = JSON.parse(response?.propsJson.toString('utf8'));
    assert.equal(props.products.length > 0, true);
    const last = props.products.at(-1);
    assert.ok(html.includes(`data-product-id="${last.id}"`), 'the body renders the props it returns');
  });

  await t.test('product 7', async () => {
    const { response } = await render(client, { page: 'product', url: '/products/7', params: { id: '7' } });
    assert.equal(response?.status, 200);
    assert.equal(response?.page, 'product');
    const props = JSON.parse(response?.propsJson.toString('utf8'));
    assert.equal(props.product.id, 7);
    assert.ok(response?.html.toString('utf8').includes(props.product.sku));
    assert.match(response?.head, new RegExp(`<title>${props.product.name}`));
  });

  await t.test('unknown product id: the not-found page with 404', async () => {
    const { response } = await render(client, { page: 'product', url: '/products/9999', params: { id: '9999' } });
    assert.equal(response?.status, 404);
    assert.equal(response?.page, 'not-found');
    assert.ok(response?.html.length > 0);
    assert.match(response?.head, /<title>/);
  });

  await t.test('redirect: 302 with Location and no body', async () => {
    const { response } = await render(client, { page: 'redirect', url: '/go' });
    assert.equal(response?.status, 302);
    assert.deepEqual(response?.headers, [{ name: 'Location', value: '/' }]);
    assert.equal(response?.html.length, 0);
    assert.equal(response?.head, '');
  });

  await t.test('status page: its status and headers pass through', async () => {
    const { response } = await render(client, { page: 'status', url: '/status?code=418&code=500' });
    assert.equal(response?.status, 418, 'query takes the first value of a key');
    assert.deepEqual(response?.headers, [{ name: 'x-fixture', value: 'yes' }, { name: 'vary', value: 'Accept-Language' }]);
  });

  await t.test('caller props reach a page without load(), and are not sent back: the caller has them', async () => {
    const { response } = await render(client, { page: 'echo', propsJson: Buffer.from('{"greeting":"hé <b>"}') });
    assert.equal(response?.propsJson.length, 0);
    assert.match(response?.html.toString('utf8'), /hé &lt;b&gt;/);
  });

  await t.test("cache tags from load() reach the edge; wrong ones fail the render, saying so", async () => {
    const { response } = await render(client, { page: 'item', url: '/items/5', params: { id: '5' } });
    assert.deepEqual(response?.cache?.tags, ['item:5', 'items']);
    const { error } = await render(client, { page: 'badtags', url: '/badtags' });
    assert.match(String(error?.details), /cache\.tags/);
  });

  await t.test('timing: worker, heap and durations are reported', async () => {
    const { response, trailer, elapsedMs } = await render(client, { page: 'sleep', url: '/sleep?ms=30' });
    const timing = response?.timing;
    assert.ok(timing.loadUs >= 25_000, `load_us ${timing.loadUs} covers the 30 ms load`);
    assert.ok(timing.renderUs > 0);
    assert.ok(timing.workerUs >= timing.loadUs + timing.renderUs, `worker_us ${timing.workerUs} covers load and render`);
    // The renderer's part, in the trailer: the worker's and less than the whole call.
    const rendererUs = Number(trailer?.get(RENDERER_TIME_TRAILER)[0]);
    assert.ok(rendererUs >= timing.workerUs && rendererUs <= elapsedMs * 1000, `renderer_us ${rendererUs}`);
    assert.ok(timing.queueUs >= 0);
    assert.ok(timing.workerId > 0);
    assert.ok(timing.heapUsedBytes > 0 && timing.heapUsedBytes < timing.heapLimitBytes);
    assert.ok(timing.externalBytes > 0);
  });
});

test('ListPages names the pages of the loaded bundle, its not-found page, and the largest request it takes', async (t) => {
  const { client } = await startRenderer(t, { max_request_mb: 5 });
  const reply = await new Promise((resolve, reject) => {
    /** @type {any} */ (client).ListPages({}, (/** @type {Error | null} */ error, /** @type {any} */ value) => (error ? reject(error) : resolve(value)));
  });
  const pages = /** @type {{pages: string[]}} */ (reply).pages;
  for (const page of ['home', 'product', 'not-found']) assert.ok(pages.includes(page), `${page} in ${pages}`);
  assert.match(/** @type {{bundleId: string}} */ (reply).bundleId, /^[0-9a-f]{12}$/);
  assert.equal(/** @type {{canStream: boolean}} */ (reply).canStream, true, 'the bundle exports renderToPipeableStream');
  assert.equal(/** @type {{maxRequestBytes: number}} */ (reply).maxRequestBytes, 5 * 1024 * 1024, 'max_request_mb, which the edge bounds a Go loader\'s props by');
  assert.equal(/** @type {{notFoundPage: string}} */ (reply).notFoundPage, 'not-found', 'the notFoundPage export, which the edge renders for 404s');
});

test('ListPages says what the bundle says of every document: its lang and its documentHead, rendered', async (t) => {
  const bundle = fileURLToPath(new URL('./fixtures/document-bundle.js', import.meta.url));
  const { client } = await startRenderer(t, { bundle });
  const reply = /** @type {{lang: string, documentHead: string}} */ (await new Promise((resolve, reject) => {
    /** @type {any} */ (client).ListPages({}, (/** @type {Error | null} */ error, /** @type {any} */ value) => (error ? reject(error) : resolve(value)));
  }));
  assert.equal(reply.lang, 'pt-BR');
  assert.equal(reply.documentHead, '<link rel="icon" href="/favicon.ico"/>');
});
