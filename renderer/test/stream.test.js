// worker/stream.js on this thread, with no pool and no worker: the fixture bundle's demo page
// with its reviews in a Suspense boundary, streamed into a MessageChannel as a worker would.
// The reviews wait on a gate this test serves (SSR_DEMO_REVIEWS_URL, app/src/reviews.js),
// so "the shell, then the boundary" is an order of events, not a race with a clock.
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import { MessageChannel } from 'node:worker_threads';
import { after, before, test } from 'node:test';
import protobuf from 'protobufjs';
import { PageTooLargeError } from '../src/errors.js';
import { preparePage } from '../src/worker/render-page.js';
import { streamPage } from '../src/worker/stream.js';
import { PROTO_PATH } from '../src/threads/wire.js';
import { FIXTURE_BUNDLE } from './helpers.js';

/** @import { Bundle } from '../src/worker/render-page.js' */
/** @import { StreamMessage } from '../src/threads/messages.js' */

const streamType = protobuf.loadSync(PROTO_PATH).lookupType('ssr.v1.RenderStreamResponse');
const LOADING = 'data-testid="reviews-loading"';
const REVIEWS = 'data-testid="reviews"';

/** @type {Bundle} */
let bundle;
/** @type {http.Server} */
let gateServer;
/** @type {Map<string, {opened: Promise<void>, open: () => void}>} each product's gate */
const gates = new Map();

/** @param {string} id */
function gate(id) {
  let g = gates.get(id);
  if (!g) {
    const { promise, resolve } = Promise.withResolvers();
    g = { opened: promise, open: () => resolve(undefined) };
    gates.set(id, g);
  }
  return g;
}

before(async () => {
  gateServer = http.createServer(async (req, res) => {
    await gate(new URL(req.url ?? '/', 'http://gate').searchParams.get('product') ?? '').opened;
    res.end();
  });
  gateServer.listen(0, '127.0.0.1');
  await once(gateServer, 'listening');
  const address = /** @type {import('node:net').AddressInfo} */ (gateServer.address());
  process.env.SSR_DEMO_REVIEWS_URL = `http://127.0.0.1:${address.port}/`;
  bundle = await import(FIXTURE_BUNDLE);
});

after(() => {
  delete process.env.SSR_DEMO_REVIEWS_URL;
  gateServer.closeAllConnections();
  gateServer.close();
});

/**
 * Streams page `page` for url into a port, as worker.js does; returns the messages as they
 * arrive, decoded, and `done`: the render's result once its every message has arrived (the
 * port's `end`, posted after the render as worker.js does).
 * @param {string} page
 * @param {string} url
 * @param {{maxBytes?: number, nonce?: string}} [options]
 */
async function stream(page, url, { maxBytes = Infinity, nonce } = {}) {
  const prepared = await preparePage(bundle, { page, url, params: { id: url.split('/')[2] }, variants: {} });
  const { port1, port2 } = new MessageChannel();
  /** @type {any[]} */
  const messages = [];
  /** @type {Set<() => void>} */
  const waiting = new Set();
  const ended = new Promise((resolve) => {
    port1.on('message', (/** @type {StreamMessage} */ message) => {
      if ('end' in message) {
        port1.close();
        resolve(undefined);
        return;
      }
      messages.push(streamType.decode(message.bytes));
      for (const check of waiting) check();
    });
  });
  const { status, headers, cache } = prepared;
  const rendered = streamPage(bundle, prepared, port2, (head) => ({
    head, status, headers, cache, page, bundleId: '',
    timing: { queueUs: 0, loadUs: 0, renderUs: 0, workerUs: 0, workerId: 0, heapUsedBytes: 0, heapLimitBytes: 0, externalBytes: 0 },
  }), { maxBytes, nonce });
  const done = rendered.finally(() => port2.postMessage({ end: true })).then(async (result) => {
    await ended;
    return result;
  });
  return {
    messages,
    done,
    /** The body so far. */
    html: () => messages.filter((m) => m.html).map((m) => Buffer.from(m.html).toString()).join(''),
    /**
     * Resolves once some message satisfies want.
     * @param {(m: any) => boolean} want
     */
    until: (want) => new Promise((resolve) => {
      const check = () => {
        if (messages.some(want)) {
          waiting.delete(check);
          resolve(undefined);
        }
      };
      waiting.add(check);
      check();
    }),
  };
}

test('the head, the shell, then each boundary as it resolves: one message per React flush', async () => {
  const s = await stream('product-reviews', '/products/5/reviews', { nonce: 'PLACEHOLDER' });
  await s.until((m) => m.html && Buffer.from(m.html).includes(LOADING));
  assert.ok(s.messages[0].head, 'the first message is the head');
  assert.equal(s.messages[0].head.status, 200);
  assert.match(s.messages[0].head.head, /<title>/);
  assert.ok(Buffer.from(s.messages[0].head.propsJson).length > 0, 'the props load() made are in the head');
  assert.ok(!s.html().includes(REVIEWS), 'the reviews came before their gate opened');
  const beforeBoundary = s.messages.length;

  gate('5').open();
  const { renderUs } = await s.done;
  assert.ok(renderUs >= 0);
  const body = s.html();
  assert.ok(body.includes(REVIEWS), 'the boundary arrived');
  assert.ok(body.indexOf(LOADING) < body.indexOf(REVIEWS), 'the fallback first, then the boundary');
  // React writes many small chunks and flushes once per completed batch: the shell, the
  // boundary. Each flush is one message.
  assert.deepEqual(s.messages.map((m) => (m.head ? 'head' : 'html')), ['head', 'html', 'html']);
  assert.equal(beforeBoundary, 2, 'the shell is one message');
  const scripts = body.match(/<script\b[^>]*>/g) ?? [];
  assert.ok(scripts.length > 0, 'React moves the boundary into place with an inline script');
  for (const tag of scripts) assert.match(tag, / nonce="PLACEHOLDER"/, 'React\'s script carries the caller\'s nonce placeholder');
});

test('without a nonce, React\'s scripts carry none', async () => {
  const s = await stream('product-reviews', '/products/6/reviews');
  await s.until((m) => m.html);
  gate('6').open();
  await s.done;
  assert.doesNotMatch(s.html(), /nonce=/);
});

test('a page past maxBytes fails with PageTooLargeError, its body not sent', async () => {
  const s = await stream('product', '/products/7', { maxBytes: 4096 });
  await assert.rejects(s.done, PageTooLargeError);
  assert.equal(s.messages.filter((m) => m.html).length, 0, 'no body message over the limit');
});
