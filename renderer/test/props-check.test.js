// The props a page receives, checked against the shape its Go type declares: in
// development only. A production bundle (no propsSchema) never loads the check, so it costs
// production nothing; a development bundle logs the first mismatch with the page and path.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { firstMismatch, propsChecker } from '../src/worker/props-check.js';
import { FIXTURE_BUNDLE, waitFor } from './helpers.js';

/** @import { Schema } from '../src/worker/props-check.js' */

/** As ssr-types writes it for a page `product` of props {product: Product, related: Product[]}. */
const schema = /** @type {Schema} */ ({
  type: 'object',
  properties: { product: { $ref: '#/$defs/ProductProps' }, tags: { $ref: '#/$defs/Tags' } },
  $defs: {
    ProductProps: {
      type: 'object',
      properties: {
        product: { $ref: '#/$defs/Product' },
        related: { type: 'array', items: { $ref: '#/$defs/Product' } },
        note: { type: 'string' },
      },
      required: ['product', 'related'],
      additionalProperties: false,
    },
    Product: {
      type: 'object',
      properties: {
        id: { type: 'integer' },
        rating: { type: 'number' },
        listPriceCents: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
        maker: { anyOf: [{ $ref: '#/$defs/Maker' }, { type: 'null' }] },
        extra: {},
      },
      required: ['id', 'rating', 'listPriceCents', 'maker'],
      additionalProperties: false,
    },
    Maker: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false },
    Tags: { type: 'object', properties: { byName: { type: 'object', additionalProperties: { type: 'boolean' } } } },
  },
});

const product = { id: 1, rating: 4.5, listPriceCents: null, maker: null };

test('firstMismatch: the first field that differs from the declared shape, by its path', () => {
  /** @type {Array<[string, string, unknown, {path: string, problem: string} | undefined]>} */
  const cases = [
    ['matching props', 'product', { product, related: [product, { ...product, listPriceCents: 1299, maker: { name: 'Kestrel' }, extra: [1] }] }, undefined],
    ['a page that declares no shape', 'home', { anything: true }, undefined],
    ['a field missing', 'product', { product }, { path: 'props.related', problem: 'missing' }],
    ['an optional field missing', 'product', { product, related: [] }, undefined],
    ['a field the type does not have', 'product', { product, related: [], relatedIds: [2] }, { path: 'props.relatedIds', problem: 'not declared by the type' }],
    ['a renamed field, deep in an array', 'product', { product, related: [product, { ...product, id: undefined, ID: 2 }] },
      { path: 'props.related[1].id', problem: 'missing' }],
    ['a string for an integer', 'product', { product: { ...product, id: '1' }, related: [] },
      { path: 'props.product.id', problem: 'expected integer, got string "1"' }],
    ['a fraction for an integer', 'product', { product: { ...product, id: 1.5 }, related: [] },
      { path: 'props.product.id', problem: 'expected integer, got number 1.5' }],
    ['null for an array (a nil Go slice)', 'product', { product, related: null },
      { path: 'props.related', problem: 'expected array, got null' }],
    ['a string for a nullable integer', 'product', { product: { ...product, listPriceCents: '12.99' }, related: [] },
      { path: 'props.product.listPriceCents', problem: 'expected integer or null, got string "12.99"' }],
    ['inside a nullable object', 'product', { product: { ...product, maker: {} }, related: [] },
      { path: 'props.product.maker.name', problem: 'missing' }],
    ['a map value', 'tags', { byName: { eco: true, 'gift-wrap': 'yes' } },
      { path: 'props.byName["gift-wrap"]', problem: 'expected boolean, got string "yes"' }],
  ];
  for (const [name, page, props, want] of cases) {
    const got = firstMismatch(schema, page, JSON.parse(JSON.stringify(props)));
    assert.deepEqual(got, want, name);
  }
});

test('propsChecker logs the mismatch with the page, and ignores props it cannot read', () => {
  /** @type {Array<Record<string, unknown>>} */
  const lines = [];
  const check = propsChecker(schema, (line) => lines.push(line));
  const encode = (/** @type {unknown} */ value) => new TextEncoder().encode(JSON.stringify(value));
  check({ page: 'product', url: '/products/1', params: {}, variants: {}, propsJson: encode({ product, related: [] }) });
  check({ page: 'product', url: '/products/1', params: {}, variants: {} });
  check({ page: 'product', url: '/products/1', params: {}, variants: {}, propsJson: new TextEncoder().encode('{not json') });
  assert.equal(lines.length, 0);
  check({ page: 'product', url: '/products/1', params: {}, variants: {}, props: { product } });
  assert.equal(lines.length, 1);
  assert.equal(lines[0].page, 'product');
  assert.equal(lines[0].path, 'props.related');
  assert.equal(lines[0].level, 40);
  assert.equal(lines[0].msg, 'props of page "product" do not match the type it declares: props.related: missing');
});

const CHECK_MODULE = new URL('../src/worker/props-check.js', import.meta.url).href;

/**
 * The render worker on `bundle`, in a plain Worker that reports the modules it resolves.
 * @param {import('node:test').TestContext} t
 * @param {string} bundle
 */
async function watchedWorker(t, bundle) {
  const worker = new Worker(new URL('./fixtures/watched-worker.js', import.meta.url), {
    workerData: { bundle, warmupRounds: 1, maxPageBytes: 16 * 1024 * 1024, heapGrowthSampleEvery: 0 },
    stdout: true,
  });
  t.after(() => worker.terminate());
  /** @type {string[]} */
  const resolved = [];
  let stdout = '';
  let rendered = 0;
  worker.stdout.on('data', (chunk) => { stdout += chunk; });
  // Messages come in order: every module the worker loads before its warm-up ends is
  // resolved before it says it is warm.
  await new Promise((resolve, reject) => {
    worker.on('message', (message) => {
      if (message.type === 'resolved') resolved.push(message.url);
      if (message.type === 'rendered') rendered++;
      if (message.type === 'worker-warm') resolve(undefined);
    });
    worker.on('error', reject);
  });
  /** @param {unknown} props */
  const renderProduct = async (props) => {
    const before = rendered;
    worker.postMessage({
      page: 'product', url: '/products/1', params: { id: '1' }, variants: {}, arrivedAt: Date.now(),
      propsJson: new TextEncoder().encode(JSON.stringify(props)),
    });
    await waitFor(() => rendered > before);
  };
  return { resolved, stdout: () => stdout, renderProduct };
}

test('a production bundle: the check is never loaded', async (t) => {
  const worker = await watchedWorker(t, FIXTURE_BUNDLE);
  await worker.renderProduct({ product: { id: '1' } });
  assert.ok(worker.resolved.some((url) => url.endsWith('/src/worker/render-page.js')), 'the watch sees the worker\'s modules');
  assert.ok(!worker.resolved.includes(CHECK_MODULE), 'props-check.js was loaded');
  assert.equal(worker.stdout(), '');
});

test('a development bundle: the first mismatch is logged with the page and the path', async (t) => {
  const worker = await watchedWorker(t, fileURLToPath(new URL('./fixtures/props-schema-bundle.js', import.meta.url)));
  assert.ok(worker.resolved.includes(CHECK_MODULE), 'props-check.js was not loaded');
  const lamp = { id: 1, name: 'Lamp' };
  await worker.renderProduct({ product: lamp, related: [lamp] });
  await worker.renderProduct({ product: lamp, related: [lamp, { id: 2, title: 'Chair' }] });
  await waitFor(() => worker.stdout().includes('\n'));
  const lines = worker.stdout().trim().split('\n').map((line) => JSON.parse(line));
  assert.equal(lines.length, 1, worker.stdout());
  assert.equal(lines[0].page, 'product');
  assert.equal(lines[0].path, 'props.related[1].name');
  assert.equal(lines[0].problem, 'missing');
});
