// Reload (SIGHUP, make dev): the workers move to the bundle file as it is now,
// one at a time behind a warm spare, while renders go on; a file that cannot
// load leaves the workers serving the bundle they have.
import assert from 'node:assert/strict';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { FIXTURE_BUNDLE, metricsText, render, startRenderer, tempDir, waitFor } from './helpers.js';

/** @import { RenderClient } from './helpers.js' */

const FIXTURE = readFileSync(FIXTURE_BUNDLE, 'utf8');
const V1 = '<p>status page</p>';

/**
 * The fixture bundle whose status page says `text`.
 * @param {string} text
 */
function version(text) {
  const source = FIXTURE.replace('children: "status page"', `children: ${JSON.stringify(text)}`);
  assert.notEqual(source, FIXTURE, 'the fixture bundle renders "status page" as a literal');
  return source;
}

/**
 * Replaces the file at once, as a build that renames its output does.
 * @param {string} path
 * @param {string} source
 */
function publish(path, source) {
  writeFileSync(`${path}.tmp`, source);
  renameSync(`${path}.tmp`, path);
}

/**
 * A renderer on a copy of the fixture bundle that the test may replace.
 * @param {import('node:test').TestContext} t
 * @param {Record<string, unknown>} [renderer]
 */
async function startOnCopy(t, renderer = {}) {
  const bundle = join(tempDir(t), 'server.js');
  publish(bundle, FIXTURE);
  return { bundle, ...(await startRenderer(t, { bundle, threads: 2, warmup_rounds: 1, ...renderer })) };
}

/**
 * Three callers render the status page in a closed loop until stop() (more
 * than threads, so renders also queue). Every answer's paragraph is kept in
 * `seen`, and in `since` once mark() was called before its call began; `ids`
 * maps each paragraph to the bundle ids its answers named.
 * @param {RenderClient} client
 */
function load(client) {
  /** @type {string[]} */
  const seen = [];
  /** @type {string[]} */
  const since = [];
  /** @type {string[]} */
  const errors = [];
  /** @type {Map<string, Set<string>>} */
  const ids = new Map();
  let running = true;
  let marked = false;
  const callers = Promise.all([0, 1, 2].map(async () => {
    while (running) {
      const after = marked;
      const { error, response } = await render(client, { page: 'status', url: '/' }, { deadlineMs: 5000 });
      if (error || response?.status !== 200) {
        errors.push(error?.message ?? `status ${response?.status}`);
        continue;
      }
      const text = response.html.toString('utf8');
      seen.push(text);
      if (after) since.push(text);
      ids.set(text, (ids.get(text) ?? new Set()).add(response.bundleId));
    }
  }));
  return {
    seen,
    since,
    errors,
    ids,
    mark() {
      marked = true;
    },
    async stop() {
      running = false;
      await callers;
    },
  };
}

test('reload under load: no render fails, and afterwards every render comes from the new file', async (t) => {
  const { app, client, logs, bundle } = await startOnCopy(t);
  /** @type {Array<{accepting: number}>} */
  const samples = [];
  const sampler = setInterval(() => samples.push(app.pool.stats()), 2);
  t.after(() => clearInterval(sampler));
  const traffic = load(client);
  await waitFor(() => traffic.seen.length > 20);
  const firstId = app.pool.exports().id;
  assert.match(firstId, /^[0-9a-f]{12}$/);

  publish(bundle, version('status page v2'));
  await app.pool.reload();
  traffic.mark();
  await waitFor(() => traffic.since.length > 20);
  await traffic.stop();
  clearInterval(sampler);

  assert.deepEqual(traffic.errors, []);
  assert.ok(traffic.seen.includes(V1));
  assert.deepEqual(new Set(traffic.since), new Set(['<p>status page v2</p>']), 'renders after the reload');
  // While both files render side by side, each answer names the file that rendered it.
  assert.deepEqual([...traffic.ids.get(V1) ?? []], [firstId]);
  assert.deepEqual([...traffic.ids.get('<p>status page v2</p>') ?? []], [app.pool.exports().id]);
  assert.notEqual(app.pool.exports().id, firstId);
  const retired = logs.filter((l) => l.msg === 'worker retired');
  assert.deepEqual(retired.map((l) => l.reason), ['reload', 'reload']);
  assert.equal(Math.min(...samples.map((s) => s.accepting)), 2, 'a warm spare joined before each worker left');
  assert.ok(logs.some((l) => l.msg === 'reloaded: every worker runs the bundle'));
  assert.match(await metricsText(app.httpAddress), /renderer_worker_retirements_total\{reason="reload"\} 2\n/);
  assert.equal(app.pool.readiness().ready, true);
});

test('after a reload, the page names and whether it can stream are the new bundle\'s (ListPages, which the edge checks its routes against)', async (t) => {
  const { app, bundle } = await startOnCopy(t);
  assert.ok(!app.pool.exports().pages.includes('added'));
  const withPage = FIXTURE.replace('var pages = {', 'var pages = { added: { component: () => null },');
  assert.notEqual(withPage, FIXTURE, 'the fixture bundle declares `var pages = {`');
  publish(bundle, withPage);
  await app.pool.reload();
  assert.ok(app.pool.exports().pages.includes('added'), `pages after the reload: ${app.pool.exports().pages}`);
  assert.ok(app.pool.knownPage('added'));
  assert.equal(app.pool.exports().canStream, true);

  // Its warm-up no longer streams either: a `stream: true` entry would fail its start.
  const withoutStreaming = FIXTURE.replace('export_renderToPipeableStream as renderToPipeableStream,', '').replace(', stream: true,', ',');
  assert.equal(withoutStreaming.length, FIXTURE.length - 'export_renderToPipeableStream as renderToPipeableStream,'.length - ' stream: true,'.length,
    'the fixture bundle exports renderToPipeableStream and warms a page streamed');
  publish(bundle, withoutStreaming);
  await app.pool.reload();
  assert.equal(app.pool.exports().canStream, false, 'a bundle that cannot stream says so, so that the edge refuses its streamed pages');
});

test('a reload asked for during a reload replaces it: both settle once the newest file serves', async (t) => {
  const { app, client, bundle } = await startOnCopy(t);
  publish(bundle, version('status page v2'));
  const first = app.pool.reload();
  publish(bundle, version('status page v3'));
  const second = app.pool.reload();
  await Promise.all([first, second]);
  for (let i = 0; i < 10; i++) {
    const { response } = await render(client, { page: 'status', url: '/' });
    assert.equal(response?.html.toString('utf8'), '<p>status page v3</p>');
  }
});

test('a file that cannot load: the reload fails saying why, the workers serve on, and a later reload works', async (t) => {
  const { app, client, logs, bundle } = await startOnCopy(t);
  const traffic = load(client);
  await waitFor(() => traffic.seen.length > 20);

  publish(bundle, `throw new Error('fixture: the new bundle is broken');\n${FIXTURE}`);
  await assert.rejects(app.pool.reload(), {
    message: `could not load the bundle: ${bundle}: fixture: the new bundle is broken`,
  });
  traffic.mark();
  await waitFor(() => traffic.since.length > 20);
  await traffic.stop();

  assert.deepEqual(traffic.errors, []);
  assert.deepEqual(new Set(traffic.seen), new Set([V1]));
  const failed = logs.find((l) => l.msg === 'reload failed: the workers go on with the bundle they have');
  assert.equal(failed?.level, 50);
  assert.match(failed?.err?.message, /fixture: the new bundle is broken/);
  assert.equal(logs.filter((l) => l.msg === 'worker retired').length, 0);
  assert.equal(app.pool.readiness().ready, true);

  publish(bundle, version('status page v2'));
  await app.pool.reload();
  const { response } = await render(client, { page: 'status', url: '/' });
  assert.equal(response?.html.toString('utf8'), '<p>status page v2</p>');
});

test('a bundle whose import never finishes: the reload fails at reload_timeout and the workers serve on', async (t) => {
  const { app, client, logs, bundle } = await startOnCopy(t, { reload_timeout: '500ms' });
  publish(bundle, `await new Promise(() => setInterval(() => {}, 1000));\n${FIXTURE}`);
  await assert.rejects(app.pool.reload(), { message: /not warm within 500 ms \(renderer\.reload_timeout\)/ });
  assert.ok(logs.some((l) => l.msg === 'reload failed: the workers go on with the bundle they have'));
  const { response } = await render(client, { page: 'status', url: '/' });
  assert.equal(response?.html.toString('utf8'), V1);
  assert.equal(app.pool.readiness().ready, true);
});

test('a spare that cannot load a file changed on disk: its retirement is called off and the workers serve on', async (t) => {
  const { app, client, logs, bundle } = await startOnCopy(t, { max_renders: 10 });
  publish(bundle, `throw new Error('fixture: the new bundle is broken');\n${FIXTURE}`);
  const traffic = load(client);
  await waitFor(() => logs.some((l) => l.msg === 'retirement called off: its spare died before it was warm'), 30_000);
  traffic.mark();
  await waitFor(() => traffic.since.length > 20);
  await traffic.stop();

  assert.deepEqual(traffic.errors, []);
  assert.match(logs.find((l) => l.msg === 'a new worker could not load the bundle')?.err?.message,
    /could not load the bundle: .*fixture: the new bundle is broken/);
  assert.equal(logs.filter((l) => l.msg === 'worker pool failed').length, 0);
  assert.equal(app.pool.readiness().ready, true);
});
