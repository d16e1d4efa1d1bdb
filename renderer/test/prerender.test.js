// Partial prerendering (RenderStreamRequest.prerender and .resume) through real gRPC calls:
// the fixture's page `prerendered` has static content beside a hole, the deferred value
// `visitor` read inside a Suspense boundary. Its prerender is the prelude (the fallback in
// the hole's place) and the postponed state; each resume renders the hole for one request.
import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { PageTooLargeError } from '../src/errors.js';
import { prerenderPage } from '../src/worker/prerender.js';
import { preparePage } from '../src/worker/render-page.js';
import { FIXTURE_BUNDLE, renderStream, startRenderer } from './helpers.js';

/** @import { Bundle } from '../src/worker/render-page.js' */

const NONCE = 'NONCE-PLACEHOLDER';
const PAGE = { page: 'prerendered', url: '/prerendered' };
const json = (/** @type {unknown} */ v) => Buffer.from(JSON.stringify(v));
/** @param {{error?: {metadata: grpc.Metadata}}} reply */
const codeOf = (reply) => reply.error?.metadata.get('ssr-error')[0];
/** @param {string} html */
const scriptTags = (html) => html.match(/<script\b[^>]*>/g) ?? [];

test('a page prerendered once, then resumed per request', async (t) => {
  const { client } = await startRenderer(t);

  await t.test('ListPages says the bundle can prerender', async () => {
    const reply = await new Promise((resolve, reject) => {
      /** @type {any} */ (client).ListPages({}, (/** @type {Error | null} */ error, /** @type {any} */ value) => (error ? reject(error) : resolve(value)));
    });
    assert.equal(/** @type {{canPrerender: boolean}} */ (reply).canPrerender, true);
  });

  // Its value is given settled in the first message, and again later: a prerender never
  // settles one, so neither may reach the prelude or the state.
  const prerender = renderStream(client, { ...PAGE, deferred: [{ name: 'visitor', valueJson: json({ name: 'Secret' }) }] },
    { prerender: true, nonce: NONCE });
  prerender.settle('visitor', { name: 'Secret' });
  const prerendered = await prerender.done;
  const head = await prerender.head;

  await t.test('the prelude holds the fallback in the hole\'s place; the trailer, the postponed state', () => {
    const { html, trailer, error } = prerendered;
    assert.equal(error, undefined, String(error?.details));
    assert.equal(head.status, 200);
    assert.match(head.head, /<title>fixture: prerendered<\/title>/);
    assert.deepEqual(JSON.parse(Buffer.from(head.propsJson).toString()), { title: 'prerendered' });
    assert.equal(head.cache.noStore, false);
    assert.equal(head.cache.maxAgeSeconds, 60);
    assert.match(html, /<h1>prerendered<\/h1>/);
    assert.match(html, /static footer/);
    assert.match(html, /<!--\$\?--><template id="B:0"><\/template><p data-testid="visitor-pending">/);
    assert.doesNotMatch(html, /data-testid="visitor"/);
    const postponed = Buffer.from(trailer?.postponed ?? []).toString();
    assert.ok(postponed.length > 0, 'the trailer carries the postponed state');
    assert.equal(typeof JSON.parse(postponed), 'object');
    for (const text of [html, postponed]) assert.doesNotMatch(text, /Secret/, 'a prerender renders no per-request value');
  });

  await t.test('React\'s script at the prelude\'s end carries the nonce placeholder', () => {
    const { html } = prerendered;
    assert.match(html, /<script nonce="NONCE-PLACEHOLDER">[^<]*<\/script>$/);
    const tags = scriptTags(html);
    assert.ok(tags.length > 0);
    for (const tag of tags) assert.match(tag, / nonce="NONCE-PLACEHOLDER"/);
  });

  const postponed = Buffer.from(prerendered.trailer?.postponed ?? []);
  const resumeOf = (/** @type {Array<Record<string, unknown>>} */ deferred) => renderStream(client,
    { ...PAGE, propsJson: Buffer.from(head.propsJson), deferred }, { resume: postponed, nonce: NONCE });

  await t.test('a resume with the value settled: the hole\'s content, put in place by React\'s scripts with the nonce', async () => {
    const resume = resumeOf([{ name: 'visitor', valueJson: json({ name: 'Ann' }) }]);
    const { html, trailer, error } = await resume.done;
    assert.equal(error, undefined, String(error?.details));
    const resumedHead = await resume.head;
    assert.equal(resumedHead.status, 200);
    assert.equal(resumedHead.page, 'prerendered');
    assert.equal(resumedHead.head, '');
    assert.equal(Buffer.from(resumedHead.propsJson).length, 0, 'the caller has the props');
    assert.match(resumedHead.bundleId, /^[0-9a-f]{12}$/);
    assert.match(html, /<div hidden id="S:0"><p data-testid="visitor">hello <!-- -->Ann<\/p><\/div>/);
    assert.match(html, /\$RC\("B:0","S:0"\)/);
    assert.doesNotMatch(html, /static footer/, 'the prelude is not sent again');
    const tags = scriptTags(html);
    assert.ok(tags.length > 0);
    for (const tag of tags) assert.match(tag, / nonce="NONCE-PLACEHOLDER"/);
    assert.equal(Buffer.from(trailer?.postponed ?? []).length, 0);
  });

  await t.test('a resume with the value pending: the head at once, the hole once the value is settled', async () => {
    const resume = resumeOf([{ name: 'visitor' }]);
    assert.equal((await resume.head).status, 200);
    resume.settle('visitor', { name: 'Bob' });
    const { html, error } = await resume.done;
    assert.equal(error, undefined, String(error?.details));
    assert.match(html, /hello <!-- -->Bob/);
    assert.match(html, /\$RC\("B:0","S:0"\)/);
  });

  await t.test('a resume whose value failed: the hole is the browser\'s to render, and the call succeeds', async () => {
    const { html, error } = await resumeOf([{ name: 'visitor', error: 'the visitor service is down' }]).done;
    assert.equal(error, undefined, String(error?.details));
    assert.match(html, /\$RX\("B:0"/);
    assert.doesNotMatch(html, /data-testid="visitor"/);
  });

  await t.test('a resume whose state is not JSON is INVALID_PROPS; of an unknown page, PAGE_NOT_FOUND', async () => {
    const invalid = await renderStream(client, { ...PAGE, deferred: [{ name: 'visitor' }] }, { resume: Buffer.from('{') }).done;
    assert.equal(invalid.error?.code, grpc.status.INVALID_ARGUMENT);
    assert.equal(codeOf(invalid), 'RENDER_ERR_INVALID_PROPS');
    assert.match(String(invalid.error?.details), /resume is not valid JSON/);
    const unknown = await renderStream(client, { page: 'no-such-page', url: '/' }, { resume: postponed }).done;
    assert.equal(unknown.error?.code, grpc.status.NOT_FOUND);
  });

  await t.test('a page that reads a value outside every Suspense boundary is refused, naming it', async () => {
    const reply = await renderStream(client, { page: 'awaits', url: '/awaits', deferred: [{ name: 'gate' }] }, { prerender: true }).done;
    assert.equal(reply.error?.code, grpc.status.INTERNAL);
    assert.equal(codeOf(reply), 'RENDER_ERR_PAGE_THREW');
    assert.match(String(reply.error?.details), /page "awaits" read per-request value "gate" outside a Suspense boundary inside an element/);
  });

  await t.test('a boundary that throws as it is prerendered: the head says no_store', async () => {
    const s = renderStream(client, { page: 'boundary-throws', url: '/boundary-throws' }, { prerender: true, nonce: NONCE });
    const { html, trailer, error } = await s.done;
    assert.equal(error, undefined, String(error?.details));
    assert.equal((await s.head).cache.noStore, true);
    assert.match(html, /<h1>static<\/h1><!--\$!-->/);
    assert.equal(Buffer.from(trailer?.postponed ?? []).length, 0);
  });

  await t.test('a page with no hole: the prelude is the whole page, the trailer has no postponed state', async () => {
    const s = renderStream(client, { page: 'echo', url: '/echo', propsJson: json({ hello: 'world' }) }, { prerender: true, nonce: NONCE });
    const { html, trailer, error } = await s.done;
    assert.equal(error, undefined, String(error?.details));
    assert.equal((await s.head).cache.noStore, false);
    assert.equal(html, '<pre>{&quot;hello&quot;:&quot;world&quot;}</pre>');
    assert.equal(Buffer.from(trailer?.postponed ?? []).length, 0);
  });
});

test('a prelude over maxBytes fails with PageTooLargeError, having sent nothing', async () => {
  /** @type {Bundle} */
  const bundle = await import(FIXTURE_BUNDLE);
  const prepared = await preparePage(bundle, { page: 'huge', url: '/huge?mb=0.01', params: {}, variants: {} });
  const { port1, port2 } = new MessageChannel();
  /** @type {unknown[]} */
  const messages = [];
  port1.on('message', (message) => messages.push(message));
  const { status, headers, cache } = prepared;
  const prerendering = prerenderPage(bundle, prepared, port2, (head) => ({
    head, status, headers, cache, page: prepared.page, bundleId: '',
    timing: { queueUs: 0, loadUs: 0, renderUs: 0, workerUs: 0, workerId: 0, heapUsedBytes: 0, heapLimitBytes: 0, externalBytes: 0 },
  }), { maxBytes: 4096 });
  await assert.rejects(prerendering, PageTooLargeError);
  // Posted after the render, as worker.js posts its `end`: every message before it has come.
  const ended = new Promise((resolve) => port1.once('message', resolve));
  port2.postMessage({ end: true });
  await ended;
  port1.close();
  assert.deepEqual(messages, [{ end: true }]);
});
