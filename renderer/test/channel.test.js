// Channel (render.proto): many renders as messages on one stream, against the real renderer
// over its unix socket, with a grpc-js client. Each render's responses are its own (byte for
// byte what its own call answers), a large page in pieces holds a small one behind it by a
// few pieces, not the page, a render is cancelled or runs out of its deadline in-band, alone,
// and the windows the renderer receives in hold many renders.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { CONNECTION_WINDOW_BYTES, STREAM_WINDOW_BYTES } from '../src/serve/grpc-server.js';
import { PIECE_BYTES } from '../src/serve/replies.js';
import { PROTO_PATH } from '../src/threads/wire.js';
import { metricsText, render, sample, startRenderer, tempDir, waitFor } from './helpers.js';

/** @import { RenderClient } from './helpers.js' */

const responseType = protobuf.loadSync(PROTO_PATH).lookupType('ssr.v1.ChannelResponse');

/**
 * A Channel as a test drives it: `send` a ChannelRequest; each render's responses, pieces
 * joined and decoded, arrive in `responses(id)` in order; `order` lists each response's id
 * and kind as it arrived.
 * @param {RenderClient} client
 */
function openChannel(client) {
  const call = /** @type {grpc.ClientDuplexStream<any, any>} */ (/** @type {any} */ (client).Channel());
  /** @type {Map<number, any[]>} */
  const byId = new Map();
  /** @type {Array<{id: number, kind: string}>} */
  const order = [];
  /** @type {Map<number, Buffer[]>} */
  const pieces = new Map();
  /** @type {Array<() => void>} */
  let waiters = [];
  /** @param {number} id @param {any} response @param {string} kind */
  const arrived = (id, response, kind) => {
    order.push({ id, kind });
    byId.set(id, [...(byId.get(id) ?? []), response]);
    for (const wake of waiters) wake();
    waiters = [];
  };
  call.on('data', (/** @type {any} */ m) => {
    const id = Number(m.id);
    if (m.piece?.length > 0) {
      pieces.set(id, [...(pieces.get(id) ?? []), m.piece]);
      order.push({ id, kind: m.lastPiece ? 'last piece' : 'piece' });
      if (!m.lastPiece) return;
      const whole = /** @type {any} */ (responseType.toObject(responseType.decode(Buffer.concat(pieces.get(id) ?? [])), { longs: Number, enums: String }));
      pieces.delete(id);
      arrived(id, whole, 'pieced');
      return;
    }
    arrived(id, m, 'whole');
  });
  /** @type {Promise<grpc.StatusObject>} */
  const status = new Promise((resolve) => call.on('status', resolve));
  call.on('error', () => {});
  return {
    call,
    order,
    status,
    /** @param {Record<string, unknown>} message */
    send: (message) => call.write(message),
    /**
     * The render's first `count` responses; without a count, all of them, up to the one that
     * ends it (not a streamed head or html).
     * @param {number} id
     * @param {number} [count]
     * @returns {Promise<any[]>}
     */
    async responses(id, count = Infinity) {
      for (;;) {
        const got = byId.get(id) ?? [];
        if (got.length >= count || (count === Infinity && got.some(ends))) return got;
        await new Promise((resolve) => waiters.push(() => resolve(undefined)));
      }
    },
  };
}

/** @param {any} r */
function ends(r) {
  return Boolean(r.rendered || r.islands || r.error || r.streamed?.trailer);
}

test('renders of every kind share one channel, each answered as its own call answers', async (t) => {
  const { client } = await startRenderer(t);
  const ch = openChannel(client);
  const page = { page: 'status', url: '/status' };
  ch.send({ id: 1, render: page, requestId: 'r-1', deadlineMs: 30_000 });
  ch.send({ id: 2, stream: { render: { page: 'home', url: '/' } } });
  ch.send({ id: 3, islands: { url: '/i', islands: [{ name: 'Greeting', propsJson: Buffer.from('{"name":"Gopher"}') }] } });
  ch.send({ id: 4, render: { page: 'no-such-page', url: '/x' } });
  const [rendered] = await ch.responses(1);
  const alone = await render(client, page);
  assert.deepEqual(Buffer.from(rendered.rendered.html), Buffer.from(alone.response?.html));
  assert.equal(rendered.rendered.status, alone.response?.status);
  assert.ok(Number(rendered.rendererUs) > 0, 'its time in the renderer comes with it');

  const streamed = await ch.responses(2);
  assert.ok(streamed[0].streamed.head, 'a streamed render begins with its head');
  assert.ok(streamed.at(-1).streamed.trailer, 'and ends with its trailer');
  assert.ok(Number(streamed.at(-1).rendererUs) > 0);
  assert.match(Buffer.concat(streamed.filter((r) => r.streamed.html?.length).map((r) => r.streamed.html)).toString(), /<\/main>|<\/div>/);

  const [islands] = await ch.responses(3);
  assert.match(Buffer.from(islands.islands.islands[0].rendered.html).toString(), /Gopher/);

  const [missing] = await ch.responses(4);
  assert.equal(missing.error.status, grpc.status.NOT_FOUND);
  assert.equal(missing.error.code, 'RENDER_ERR_PAGE_NOT_FOUND');

  ch.call.end();
  const status = await ch.status;
  assert.equal(status.code, grpc.status.OK, 'the caller closed its side: the channel ends');
});

test('a large page in pieces holds a small one on the same channel by a few pieces, not the page', async (t) => {
  const { app, client } = await startRenderer(t, { max_page_mb: 32 });
  const ch = openChannel(client);
  // At the large page's first piece the client stops reading: grpc-js buffers 16 messages,
  // HTTP/2's flow control then holds the rest in the renderer, queued whole in its Replies,
  // while the small page renders.
  let paused = false;
  ch.call.on('data', (/** @type {any} */ m) => {
    if (!paused && Number(m.id) === 1) {
      paused = true;
      ch.call.pause();
    }
  });
  ch.send({ id: 1, render: { page: 'huge', url: '/huge?mb=16' } });
  await waitFor(() => paused);
  ch.send({ id: 2, render: { page: 'status', url: '/status' } });
  // Its response is queued behind the large one's pieces handed to grpc-js (two) and the
  // one next in turn, once it has rendered: the renderer's own metric says when.
  await waitFor(async () => sample(await metricsText(app.httpAddress), 'renderer_renders_total{page="status",outcome="ok"}') === 1);
  ch.call.resume();
  const [large] = await ch.responses(1);
  const [small] = await ch.responses(2);
  assert.equal(Buffer.from(large.rendered.html).toString().length > 16 * 1024 * 1024, true);
  assert.equal(small.rendered.status, 200);
  const pieces = ch.order.filter((r) => r.id === 1).length;
  assert.ok(pieces > 60, `the 16 MB page came in ${pieces} pieces of ${PIECE_BYTES} bytes`);
  const smallAt = ch.order.findIndex((r) => r.id === 2);
  const before = ch.order.slice(0, smallAt).filter((r) => r.id === 1).length;
  // 1 read + 16 buffered by grpc-js + what HTTP/2's 64 KiB window and the renderer's two in
  // flight hold + the one in turn: about 21, under half the page's.
  assert.ok(before < pieces / 2, `the small page came after ${before} of the large page's ${pieces} pieces`);
});

test('a render cancelled in-band, or past its deadline in-band, fails alone; the channel goes on', async (t) => {
  const { client, logs } = await startRenderer(t);
  const ch = openChannel(client);
  // Waits for a deferred value nobody settles: only the cancel ends it.
  ch.send({ id: 1, stream: { render: { page: 'product-reviews', url: '/products/7/reviews', params: { id: '7' }, deferred: [{ name: 'reviews' }] } } });
  ch.send({ id: 2, render: { page: 'sleep', url: '/sleep?ms=10000' }, deadlineMs: 300 });
  const [head] = await ch.responses(1, 1);
  assert.ok(head.streamed.head, 'the streamed render sent its shell and waits for its value');
  ch.send({ id: 1, cancel: {} });
  const cancelled = await ch.responses(1);
  assert.equal(cancelled.at(-1).error.code, 'RENDER_ERR_CANCELLED');
  assert.equal(cancelled.at(-1).error.status, grpc.status.CANCELLED);
  const [late] = await ch.responses(2);
  assert.equal(late.error.code, 'RENDER_ERR_DEADLINE');
  assert.equal(late.error.status, grpc.status.DEADLINE_EXCEEDED);
  // The channel still renders.
  ch.send({ id: 3, render: { page: 'status', url: '/status' } });
  const [after] = await ch.responses(3);
  assert.equal(after.rendered.status, 200);
  // A second render under an id in flight is refused; the first is not disturbed.
  ch.send({ id: 4, render: { page: 'sleep', url: '/sleep?ms=50' } });
  ch.send({ id: 4, render: { page: 'status', url: '/status' } });
  const both = await ch.responses(4, 2);
  assert.equal(both[0].error.status, grpc.status.INVALID_ARGUMENT);
  assert.equal(both[1].rendered.status, 200);
  assert.ok(logs.some((l) => l.code === 'RENDER_ERR_CANCELLED'));
  ch.call.end();
});

test('a render withdrawn while it waited for a worker is logged as withdrawn while queued', async (t) => {
  const { app, client, logs } = await startRenderer(t, { threads: 1 });
  const gate = join(tempDir(t), 'gate');
  const ch = openChannel(client);
  // Holds the one worker's thread until the gate exists: once the pool sees that, the next
  // render waits in its queue (thread-blame.test.js).
  ch.send({ id: 1, render: { page: 'busy-shell', url: `/busy-shell?gate=${encodeURIComponent(gate)}` } });
  await waitFor(() => app.pool.workers().some((w) => w.busy && w.onCpu !== 0 && w.busyMs > app.pool.stats().meanRenderMs));
  ch.send({ id: 2, render: { page: 'status', url: '/status' }, requestId: 'waited' });
  await waitFor(() => app.pool.stats().queued === 1);
  ch.send({ id: 2, cancel: {} });
  const [cancelled] = await ch.responses(2);
  assert.equal(cancelled.error.code, 'RENDER_ERR_CANCELLED');
  writeFileSync(gate, '');
  const [done] = await ch.responses(1);
  assert.equal(done.rendered.status, 200);
  const line = logs.find((l) => l.requestId === 'waited' && l.code === 'RENDER_ERR_CANCELLED');
  assert.equal(line?.msg, 'render withdrawn: its caller stopped waiting');
  assert.equal(line?.queued, true, JSON.stringify(line));
  ch.call.end();
});

test('a channel the caller drops mid-render cancels the renders in flight on it', async (t) => {
  const { client, logs } = await startRenderer(t);
  const ch = openChannel(client);
  ch.send({ id: 1, stream: { render: { page: 'product-reviews', url: '/products/7/reviews', params: { id: '7' }, deferred: [{ name: 'reviews' }] } }, requestId: 'dropped' });
  await ch.responses(1, 1);
  ch.call.cancel();
  await waitFor(() => logs.some((l) => l.requestId === 'dropped' && l.code === 'RENDER_ERR_CANCELLED'));
  // Not the renderer's failure: an info line saying where the render was, and how long it
  // had waited, with no stack.
  const line = logs.find((l) => l.requestId === 'dropped' && l.code === 'RENDER_ERR_CANCELLED');
  assert.equal(line?.msg, 'render withdrawn: its caller stopped waiting');
  assert.equal(line?.level, 30);
  assert.equal(line?.queued, false, 'its shell had been sent');
  assert.ok(Number.isInteger(line?.waitedMs) && line?.err === undefined, JSON.stringify(line));
});

test('at shutdown a channel ends once its renders have answered', async (t) => {
  const { app, client } = await startRenderer(t);
  const ch = openChannel(client);
  ch.send({ id: 1, render: { page: 'sleep', url: '/sleep?ms=300' } });
  await waitFor(() => app.pool.stats().inFlight > 0);
  const closed = app.close();
  const [answer] = await ch.responses(1);
  assert.equal(answer.rendered?.status, 200, 'the render in flight answered');
  assert.equal((await ch.status).code, grpc.status.OK);
  await closed;
});

test('the renderer receives in windows that hold many renders, not HTTP/2\'s 64 KiB', async (t) => {
  const { app } = await startRenderer(t);
  const socket = app.grpcAddress.replace(/^unix:\/\//, '');
  const session = http2.connect('http://renderer', { createConnection: () => net.connect(socket) });
  t.after(() => session.destroy());
  const [settings] = await once(session, 'remoteSettings');
  assert.equal(settings.initialWindowSize, STREAM_WINDOW_BYTES, 'each stream');
  // The connection's window comes as a WINDOW_UPDATE after the settings.
  await waitFor(() => /** @type {number} */ (session.state.remoteWindowSize) >= CONNECTION_WINDOW_BYTES);
});
