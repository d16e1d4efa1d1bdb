// RenderIslands over the real gRPC path: the islands of one page in one call, rendered
// together by one pool task, each succeeding or failing alone, answered in the request's
// order; one by one when the batch fails for what may be one island's fault (a loop that
// pins its worker), until that island alone is quarantined. Against the fixture bundle's
// islands (Greeting, Throws, Loops) and the demo's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { metricsText, renderIslands, sample, startRenderer, waitFor } from './helpers.js';

/**
 * @param {string} name
 * @param {unknown} props
 */
const island = (name, props) => ({ name, propsJson: Buffer.from(JSON.stringify(props)) });

test('RenderIslands renders the islands of a page in one call', async (t) => {
  // max_page_mb 1: the reply, which holds every island, is held to it as one page is.
  const { app, client } = await startRenderer(t, { max_page_mb: 1 });

  await t.test('each island in the order asked, with its HTML, status 200 and the bundle that rendered it', async () => {
    const { response, error } = await renderIslands(client, [
      island('Greeting', { name: 'Ana' }),
      island('FeaturedProducts', { products: [{ id: 7, name: 'Oak Lamp', price: '19.99 USD' }] }),
      island('Greeting', { name: 'Bo <b>' }),
    ]);
    assert.equal(error, undefined);
    const results = response?.islands ?? [];
    assert.equal(results.length, 3);
    for (const { rendered, error: failed } of results) {
      assert.equal(failed, undefined);
      assert.equal(rendered?.status, 200);
      assert.equal(rendered?.page, '');
      assert.equal(rendered?.head, '');
      assert.equal(rendered?.propsJson.length, 0, 'the caller has the props');
      assert.match(rendered?.bundleId, /^[0-9a-f]{12}$/);
      assert.ok(rendered?.timing.workerId > 0);
    }
    // Each timed as its own render: it began once the one before it was done (each
    // figure rounded to the microsecond).
    const timings = results.map((r) => r.rendered?.timing);
    for (const [i, timing] of timings.entries()) {
      assert.ok(timing.renderUs > 0 && timing.workerUs >= timing.renderUs, JSON.stringify(timing));
      if (i > 0) assert.ok(timing.queueUs >= timings[i - 1].queueUs + timings[i - 1].workerUs - 1, JSON.stringify(timings));
    }
    const html = results.map((r) => r.rendered?.html.toString('utf8'));
    assert.equal(html[0], '<p class="greeting">Hello, <!-- -->Ana<!-- -->!</p>');
    assert.match(html[1], /data-testid="featured"/);
    assert.match(html[1], /<a href="\/products\/7">Oak Lamp<\/a>/);
    assert.match(html[1], /19\.99 USD/);
    assert.match(html[2], /Bo &lt;b&gt;/);
  });

  await t.test('an unknown island, a throwing one and props that are no object fail alone', async () => {
    const { response, error } = await renderIslands(client, [
      island('Greeting', { name: 'first' }),
      island('NoSuchIsland', {}),
      island('Throws', {}),
      island('Greeting', [1, 2]),
      { name: 'Greeting', propsJson: Buffer.from('{not json') },
      { name: 'Greeting' },
      island('Greeting', { name: 'last' }),
    ]);
    assert.equal(error, undefined);
    const results = response?.islands ?? [];
    assert.deepEqual(results.map((r) => r.error?.code ?? 'ok'), [
      'ok', 'RENDER_ERR_PAGE_NOT_FOUND', 'RENDER_ERR_PAGE_THREW', 'RENDER_ERR_INVALID_PROPS', 'RENDER_ERR_INVALID_PROPS', 'ok', 'ok',
    ]);
    assert.match(String(results[1].error?.message), /unknown island "NoSuchIsland"/);
    assert.equal(results[2].error?.message, 'fixture: page threw on purpose');
    assert.match(results[5].rendered?.html.toString('utf8'), /Hello, <!-- -->!/, 'no props_json: {}');
    assert.match(results[6].rendered?.html.toString('utf8'), /last/);
  });

  await t.test("the demo's islands: a cart that counts, an island that fails on the server only", async () => {
    const { response } = await renderIslands(client, [
      island('CartSummary', { user: 'ana', items: 3 }),
      island('Flaky', { fail: false, note: 'fine' }),
      island('Flaky', { fail: true, note: 'for the browser' }),
    ]);
    const [cart, flaky, failing] = response?.islands ?? [];
    const cartHtml = cart.rendered?.html.toString('utf8');
    assert.match(cartHtml, /data-testid="cart"/);
    assert.match(cartHtml, /data-testid="cart-count">3</);
    assert.match(cartHtml, /data-testid="cart-add"/);
    assert.match(flaky.rendered?.html.toString('utf8'), /data-testid="flaky">fine</);
    assert.equal(failing.error?.code, 'RENDER_ERR_PAGE_THREW');
  });

  await t.test('ListPages names the islands beside the pages', async () => {
    const reply = await new Promise((resolve, reject) => {
      /** @type {any} */ (client).ListPages({}, (/** @type {Error | null} */ error, /** @type {any} */ value) => (error ? reject(error) : resolve(value)));
    });
    const { islands, pages } = /** @type {{islands: string[], pages: string[]}} */ (reply);
    assert.deepEqual([...islands].sort(), ['CartSummary', 'FeaturedProducts', 'Flaky', 'Greeting', 'Loops', 'Throws']);
    assert.ok(pages.includes('home') && !pages.includes('Greeting'));
  });

  await t.test('metrics: one island call per call, each island a render of page "island:NAME"', async () => {
    const before = await metricsText(app.httpAddress);
    await renderIslands(client, [island('Greeting', { name: 'a' }), island('Greeting', { name: 'b' }), island('NoSuchIsland', {})]);
    await renderIslands(client, [island('Greeting', { name: 'c' })]);
    const after = await metricsText(app.httpAddress);
    const delta = (/** @type {string} */ name) => (sample(after, name) ?? 0) - (sample(before, name) ?? 0);
    assert.equal(delta('renderer_island_calls_total'), 2);
    assert.equal(delta('renderer_renders_total{page="island:Greeting",outcome="ok"}'), 3);
    assert.equal(delta('renderer_render_duration_seconds_count{page="island:Greeting",outcome="ok"}'), 3);
    assert.equal(delta('renderer_renders_total{page="(unknown)",outcome="RENDER_ERR_PAGE_NOT_FOUND"}'), 1);
    assert.ok(!after.includes('NoSuchIsland'), 'an island the bundle lacks is no label');
  });

  await t.test("metrics: a batch's wait and heap are observed once, each island's CPU is its own", async () => {
    const before = await metricsText(app.httpAddress);
    // Four small islands beside a large one: each of the four held the thread for its own
    // render alone, not the batch's (which the large one fills).
    const products = Array.from({ length: 5000 }, (_, i) => ({ id: i, name: `Product ${i}`, price: '1.00 USD' }));
    const { response } = await renderIslands(client, [
      ...Array.from({ length: 4 }, (_, i) => island('Greeting', { name: `n${i}` })), island('FeaturedProducts', { products }),
    ]);
    assert.equal(response?.islands.filter((r) => r.rendered).length, 5);
    const after = await metricsText(app.httpAddress);
    const delta = (/** @type {string} */ name) => (sample(after, name) ?? 0) - (sample(before, name) ?? 0);
    assert.equal(delta('renderer_queue_wait_seconds_count'), 1);
    assert.equal(delta('renderer_worker_heap_used_bytes_count'), 1);
    assert.equal(delta('renderer_render_cpu_seconds_count{page="island:Greeting"}'), 4);
    assert.equal(delta('renderer_render_cpu_seconds_count{page="island:FeaturedProducts"}'), 1);
    const small = delta('renderer_render_cpu_seconds_sum{page="island:Greeting"}');
    const large = delta('renderer_render_cpu_seconds_sum{page="island:FeaturedProducts"}');
    assert.ok(small < large, `four small islands held the thread ${small * 1000} ms, the large one ${large * 1000} ms`);
  });

  await t.test('the islands of a call are one pool task, whatever their number', async () => {
    const tasks = () => app.pool.workers().reduce((n, w) => n + w.renders, 0);
    const before = tasks();
    const { response } = await renderIslands(client, Array.from({ length: 12 }, (_, i) => island('Greeting', { name: `n${i}` })));
    assert.equal(response?.islands.filter((r) => r.rendered).length, 12);
    assert.equal(tasks() - before, 1);
  });

  await t.test('more than 256 islands: INVALID_ARGUMENT, nothing rendered', async () => {
    const { error } = await renderIslands(client, Array.from({ length: 257 }, () => island('Greeting', { name: 'x' })));
    assert.equal(error?.code, status.INVALID_ARGUMENT);
    assert.match(String(error?.details), /257 islands, more than 256/);
  });

  await t.test('islands that fit one by one but not together: RESOURCE_EXHAUSTED, PAGE_TOO_LARGE', async () => {
    const name = 'x'.repeat(600 * 1024);
    const { error } = await renderIslands(client, [island('Greeting', { name }), island('Greeting', { name })]);
    assert.equal(error?.code, status.RESOURCE_EXHAUSTED);
    assert.deepEqual(error?.metadata.get('ssr-error'), ['RENDER_ERR_PAGE_TOO_LARGE']);
  });

  await t.test('a draining renderer fails the call as a whole: UNAVAILABLE, RENDER_ERR_DRAINING', async () => {
    app.pool.drain();
    for (const names of [['late'], ['late', 'later']]) {
      const { error } = await renderIslands(client, names.map((name) => island('Greeting', { name })));
      assert.equal(error?.code, status.UNAVAILABLE);
      assert.deepEqual(error?.metadata.get('ssr-error'), ['RENDER_ERR_DRAINING']);
    }
  });
});

test('an island that loops: its batch fails, its neighbours render one by one, it alone is quarantined', async (t) => {
  // Three workers: one replaced after the batch's death, one pinned by the loop again, one
  // for the neighbours. default_deadline is the renderer's budget for a call that carries
  // no deadline of its own, and for each island rendered again one by one.
  const { app, client, logs } = await startRenderer(t, { threads: 3, quarantine_after: 2, default_deadline: '1s' });
  const neighbours = (/** @type {string} */ a, /** @type {string} */ b) => [island('Greeting', { name: a }), island('Loops', {}), island('Greeting', { name: b })];
  const codesOf = (/** @type {Awaited<ReturnType<typeof renderIslands>>} */ reply) => reply.response?.islands.map((r) => r.error?.code ?? 'ok');
  const ready = () => waitFor(() => app.pool.readiness().ready);
  const before = await metricsText(app.httpAddress);
  const delta = async (/** @type {string} */ name) => (sample(await metricsText(app.httpAddress), name) ?? 0) - (sample(before, name) ?? 0);

  await t.test('no deadline on the call: the batch pins its worker, then each island renders alone in the same call', async () => {
    await ready();
    const reply = await renderIslands(client, neighbours('a', 'b'));
    assert.deepEqual(codesOf(reply), ['ok', 'RENDER_ERR_DEADLINE', 'ok']);
    assert.match(reply.response?.islands[2].rendered?.html.toString('utf8'), /Hello, <!-- -->b/);
    // A death each: the batch's key, and the looping island's own.
    assert.equal(app.quarantine.tracked, 2);
    assert.equal(app.quarantine.size, 0);
  });

  await t.test("the call's deadline passed when the batch failed: each island fails with it; the batch is quarantined", async () => {
    await ready();
    const { error } = await renderIslands(client, neighbours('a', 'b'), { deadlineMs: 1000 });
    assert.equal(error?.code, status.DEADLINE_EXCEEDED);
    await waitFor(() => app.quarantine.size === 1);
    assert.ok(logs.some((l) => l.msg === 'render quarantined' && l.page === 'island:*'));
  });

  await t.test('the quarantined batch is refused at once: one by one, the loop pins a worker alone and is quarantined', async () => {
    await ready();
    const reply = await renderIslands(client, neighbours('a', 'b'));
    assert.deepEqual(codesOf(reply), ['ok', 'RENDER_ERR_DEADLINE', 'ok']);
    await waitFor(() => app.quarantine.size === 2);
    assert.ok(logs.some((l) => l.msg === 'render quarantined' && l.page === 'island:Loops'));
  });

  await t.test('the looping island is refused at once beside any neighbours, which render', async () => {
    await ready();
    const exits = await delta('renderer_worker_exits_total{reason="deadline"}');
    for (const [a, b] of [['a', 'b'], ['c', 'd']]) {
      const reply = await renderIslands(client, neighbours(a, b));
      assert.deepEqual(codesOf(reply), ['ok', 'RENDER_ERR_QUARANTINED', 'ok']);
    }
    assert.equal(await delta('renderer_worker_exits_total{reason="deadline"}'), exits, 'no worker died for it');
  });

  await t.test('metrics: each island counted once per call, whichever way it rendered', async () => {
    // Greeting: ok in calls 1, 3, 4 and 5; the batch's deadline in call 2.
    assert.equal(await delta('renderer_renders_total{page="island:Greeting",outcome="ok"}'), 8);
    assert.equal(await delta('renderer_renders_total{page="island:Greeting",outcome="RENDER_ERR_DEADLINE"}'), 2);
    assert.equal(await delta('renderer_render_duration_seconds_count{page="island:Greeting",outcome="ok"}'), 8);
    assert.equal(await delta('renderer_renders_total{page="island:Loops",outcome="RENDER_ERR_DEADLINE"}'), 3);
    assert.equal(await delta('renderer_renders_total{page="island:Loops",outcome="RENDER_ERR_QUARANTINED"}'), 2);
    assert.equal(await delta('renderer_island_calls_total'), 5);
    // The batch is no render: its quarantine sent its islands one by one, where each counted.
    assert.equal(await delta('renderer_quarantines_total{page="island:Loops"}'), 1);
    assert.equal(await delta('renderer_quarantine_refusals_total{page="island:Loops"}'), 2);
    assert.ok(!(await metricsText(app.httpAddress)).includes('page="island:*",outcome'));
  });
});
