// serve/replies.js: a Channel's response framed around the worker's bytes in place, and a
// large one cut in pieces whose bytes, joined, are the response.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import protobuf from 'protobufjs';
import { frame, PIECE_BYTES, Replies, responseFields } from '../src/serve/replies.js';
import { allocMessage, encodeRenderResponse, PROTO_PATH } from '../src/threads/wire.js';

const responseType = protobuf.loadSync(PROTO_PATH).lookupType('ssr.v1.ChannelResponse');
const fields = {
  head: '<title>t</title>', status: 200, headers: [], cache: { maxAgeSeconds: 0, noStore: false, tags: [] }, page: 'p', bundleId: 'b',
  timing: { queueUs: 1, loadUs: 2, renderUs: 3, workerUs: 4, workerId: 5, heapUsedBytes: 6, heapLimitBytes: 7, externalBytes: 8 },
};

/** @param {Uint8Array} bytes */
function decode(bytes) {
  return /** @type {any} */ (responseType.toObject(responseType.decode(bytes), { longs: Number }));
}

test('a response is framed in the headroom the worker left, with no copy of the page', () => {
  const message = encodeRenderResponse('<p>'.repeat(10_000), '{"a":1}', fields);
  const framed = frame(2 ** 40, responseFields().rendered, message, 123_456);
  assert.equal(framed.buffer, message.buffer, 'the same memory');
  const decoded = decode(framed);
  assert.equal(decoded.id, 2 ** 40);
  assert.equal(decoded.rendererUs, 123_456);
  assert.equal(Buffer.from(decoded.rendered.html).toString(), '<p>'.repeat(10_000));
  assert.equal(decoded.rendered.page, 'p');
});

test('bytes without headroom are copied, never written in front of', () => {
  const pool = Buffer.alloc(64, 7);
  const message = pool.subarray(40, 40);
  const framed = frame(1, responseFields().islands, message);
  assert.notEqual(framed.buffer, pool.buffer);
  assert.deepEqual([...pool.subarray(0, 40)], Array(40).fill(7));
  assert.deepEqual(decode(framed).islands, {});
  assert.equal(allocMessage(5).byteOffset > 0, true);
});

test('a large response goes in pieces, sent in turn with the others waiting', async () => {
  /** @type {Buffer[]} */
  const written = [];
  /** @type {Array<() => void>} */
  const callbacks = [];
  const call = /** @type {any} */ ({ write: (/** @type {Buffer} */ b, /** @type {() => void} */ cb) => { written.push(Buffer.from(b)); callbacks.push(cb); } });
  const replies = new Replies(call);
  const large = encodeRenderResponse('x'.repeat(3 * PIECE_BYTES), '', fields);
  replies.send(1, 'rendered', large, 9);
  replies.send(2, 'rendered', encodeRenderResponse('small', '', fields));
  // Two pieces fill what may be handed over at once; the small one waits for room, and
  // then for the one piece the large page had next in turn.
  assert.equal(written.length, 2);
  while (callbacks.length > 0) /** @type {() => void} */ (callbacks.shift())();
  const order = written.map((b) => {
    const m = decode(b);
    return m.piece?.length ? `${m.id}:piece${m.lastPiece ? ':last' : ''}` : `${m.id}:whole`;
  });
  assert.deepEqual(order, ['1:piece', '1:piece', '1:piece', '2:whole', '1:piece:last']);
  const joined = Buffer.concat(written.filter((_, i) => order[i].startsWith('1:')).map((b) => decode(b).piece));
  const whole = decode(joined);
  assert.equal(whole.id, 1);
  assert.equal(whole.rendererUs, 9);
  assert.equal(whole.rendered.html.length, 3 * PIECE_BYTES);
});
