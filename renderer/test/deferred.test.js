// Deferred values (RenderRequest.deferred) in the worker, with no pool: the promises the page
// gets, a page that does not stream rendering with values already settled, and a streamed one
// receiving a value over its port while React waits on it, as grpc-server.js posts it.
import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import { before, test } from 'node:test';
import protobuf from 'protobufjs';
import { InvalidPropsError } from '../src/errors.js';
import { DeferredValues, componentProps } from '../src/worker/deferred-values.js';
import { preparePage, renderPage } from '../src/worker/render-page.js';
import { streamPage } from '../src/worker/stream.js';
import { PROTO_PATH } from '../src/threads/wire.js';
import { FIXTURE_BUNDLE } from './helpers.js';

/** @import { Bundle } from '../src/worker/render-page.js' */
/** @import { StreamMessage, SettledMessage } from '../src/threads/messages.js' */

const streamType = protobuf.loadSync(PROTO_PATH).lookupType('ssr.v1.RenderStreamResponse');
const json = (/** @type {unknown} */ v) => new TextEncoder().encode(JSON.stringify(v));
const GO_REVIEWS = [{ author: 'Gopher', stars: 5, text: 'Computed in Go.' }];

/** @type {Bundle} */
let bundle;
before(async () => {
  bundle = await import(FIXTURE_BUNDLE);
});

test('each value is a promise that use() can read: settled ones carry their status', async () => {
  const values = new DeferredValues([
    { name: 'ok', valueJson: json({ a: 1 }) },
    { name: 'failed', error: 'deferred value "failed" failed' },
    { name: 'broken', valueJson: new TextEncoder().encode('{') },
    { name: 'later' },
  ]);
  const { ok, failed, broken, later } = /** @type {Record<string, any>} */ (values.prop);
  assert.deepEqual([ok.status, ok.value], ['fulfilled', { a: 1 }]);
  assert.equal(failed.status, 'rejected');
  assert.equal(failed.reason.message, 'deferred value "failed" failed');
  assert.match(broken.reason.message, /deferred value "broken" is not valid JSON/);
  assert.deepEqual(values.pending, ['later']);
  values.settle({ name: 'later', valueJson: json(7) });
  values.settle({ name: 'later', error: 'too late: the first outcome holds' });
  values.settle({ name: 'unknown', valueJson: json(1) });
  assert.equal(await later, 7);
  assert.deepEqual(values.pending, []);
});

test('a name twice, or props that hold the deferred prop\'s name, are invalid', () => {
  assert.throws(() => new DeferredValues([{ name: 'a' }, { name: 'a' }]), InvalidPropsError);
  const values = new DeferredValues([{ name: 'a' }]);
  assert.deepEqual(Object.keys(componentProps({ x: 1 }, values)), ['x', 'deferred']);
  assert.throws(() => componentProps({ deferred: 1 }, values), /the page's props have a key "deferred"/);
  const props = { deferred: 1 };
  assert.equal(componentProps(props, undefined), props, 'without deferred values the props are the page\'s own');
});

test('a page that does not stream renders with its values settled; a pending one is refused', async () => {
  const task = { page: 'product-reviews', url: '/products/7/reviews', params: { id: '7' }, variants: {} };
  const page = await renderPage(bundle, { ...task, deferred: [{ name: 'reviews', valueJson: json(GO_REVIEWS) }] });
  assert.match(page.html, /Gopher/);
  assert.doesNotMatch(page.html, /reviews-loading/);
  assert.doesNotMatch(page.propsJson, /deferred/, 'the values are not props: the edge embeds them itself');
  await assert.rejects(renderPage(bundle, { ...task, deferred: [{ name: 'reviews' }] }), /deferred value "reviews" is pending/);
});

test('a streamed page sends its shell at once and the boundary once the value is settled over the port', async () => {
  const prepared = await preparePage(bundle, {
    page: 'product-reviews', url: '/products/7/reviews', params: { id: '7' }, variants: {}, deferred: [{ name: 'reviews' }],
  });
  const { port1, port2 } = new MessageChannel();
  /** @type {string[]} */
  const html = [];
  const shell = Promise.withResolvers();
  const ended = Promise.withResolvers();
  port1.on('message', (/** @type {StreamMessage} */ message) => {
    if ('end' in message) {
      port1.close();
      ended.resolve(undefined);
      return;
    }
    const decoded = /** @type {any} */ (streamType.decode(message.bytes));
    if (Object.hasOwn(decoded, 'html')) {
      html.push(Buffer.from(decoded.html).toString());
      shell.resolve(undefined);
    }
  });
  const { status, headers, cache } = prepared;
  const rendered = streamPage(bundle, prepared, port2, (head) => ({
    head, status, headers, cache, page: prepared.page, bundleId: '',
    timing: { queueUs: 0, loadUs: 0, renderUs: 0, workerUs: 0, workerId: 0, heapUsedBytes: 0, heapLimitBytes: 0, externalBytes: 0 },
  }), { maxBytes: Infinity }).finally(() => port2.postMessage({ end: true }));
  await shell.promise;
  assert.match(html.join(''), /reviews-loading/);
  assert.doesNotMatch(html.join(''), /Gopher/, 'the boundary came before its value');
  /** @type {SettledMessage} */
  const settled = { settled: { name: 'reviews', valueJson: json(GO_REVIEWS) } };
  port1.postMessage(settled);
  await rendered;
  await ended.promise; // posted after the render's every message, as worker.js does
  assert.match(html.slice(1).join(''), /Gopher/);
});
