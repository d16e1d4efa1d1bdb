// The worker's hand-assembled RenderResponse (alone, or within a RenderIslandsResponse)
// must decode, by a stock protobuf decoder, to exactly the fields it was given.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import protobuf from 'protobufjs';
import { PageTooLargeError } from '../src/errors.js';
import { encodeIslandsResponse, encodeRenderResponse, HEADROOM, prepareRenderResponse, PROTO_PATH } from '../src/threads/wire.js';

const RenderResponse = protobuf.loadSync(PROTO_PATH).lookupType('ssr.v1.RenderResponse');

/** @type {import('../src/threads/wire.js').ResponseFields} */
const fields = {
  head: '<title>héllo</title>',
  status: 404,
  headers: [{ name: 'x-page', value: 'ok' }],
  cache: { maxAgeSeconds: 30, noStore: false, tags: ['product:7'] },
  page: 'home',
  bundleId: '0123456789ab',
  timing: {
    queueUs: 12, loadUs: 340, renderUs: 5600, workerUs: 6100, workerId: 3,
    heapUsedBytes: 2 ** 33, heapLimitBytes: 2 ** 34, externalBytes: 0,
  },
};

const cases = [
  { name: 'empty html and props', html: '', props: '' },
  { name: 'one-byte lengths', html: '<p>hi</p>', props: '{}' },
  { name: 'two- and three-byte UTF-8', html: '<p>é €  \u2028 😀</p>', props: '{"a":"ü"}' },
  { name: 'lengths past 2^14 and 2^21', html: 'x'.repeat(3_000_000), props: `{"s":"${'é'.repeat(9000)}"}` },
];

for (const { name, html, props } of cases) {
  test(`encodeRenderResponse: ${name}`, () => {
    const bytes = encodeRenderResponse(html, props, fields);
    assert.equal(bytes.byteOffset, HEADROOM, 'the headroom a Channel response is framed in (serve/replies.js)');
    assert.equal(bytes.buffer.byteLength, HEADROOM + bytes.byteLength, 'and then the message alone (transferable as is)');
    const decoded = /** @type {any} */ (RenderResponse.toObject(RenderResponse.decode(bytes), { longs: Number }));
    assert.equal(Buffer.from(decoded.html ?? []).toString('utf8'), html);
    assert.equal(Buffer.from(decoded.propsJson ?? []).toString('utf8'), props);
    assert.deepEqual({ ...decoded, html: undefined, propsJson: undefined }, { ...fields, html: undefined, propsJson: undefined });
  });
}

test('encodeRenderResponse: a message over maxBytes is refused, one at the limit is not', () => {
  const MiB = 1024 * 1024;
  const exact = encodeRenderResponse('x'.repeat(MiB - 200), '{}', fields).byteLength;
  const html = 'x'.repeat(MiB - 200 + (MiB - exact));
  assert.equal(encodeRenderResponse(html, '{}', fields, MiB).byteLength, MiB);
  // One byte more: over by the framing, though HTML + head + props fit.
  assert.throws(() => encodeRenderResponse(`${html}x`, '{}', fields, MiB), (err) => {
    assert.ok(err instanceof PageTooLargeError);
    assert.equal(err.code, 'RENDER_ERR_PAGE_TOO_LARGE');
    assert.match(err.message, new RegExp(`^page "home" is too large: its response would be ${MiB + 1} bytes \\(HTML 1\\.0 MB, head 0\\.0 MB, props_json 0\\.0 MB\\), over the 1 MB limit of renderer\\.max_page_mb$`));
    return true;
  });
  // Far over: refused from the sizes alone.
  assert.throws(() => encodeRenderResponse('é'.repeat(MiB), '', { ...fields, head: 'x'.repeat(MiB) }, MiB), {
    message: /would be at least 3145728 bytes \(HTML 2\.0 MB, head 1\.0 MB, props_json 0\.0 MB\)/,
  });
});

test('encodeIslandsResponse: an island written in place is the same as its bytes copied in', () => {
  const RenderIslandsResponse = protobuf.loadSync(PROTO_PATH).lookupType('ssr.v1.RenderIslandsResponse');
  const html = '<p>é</p>'.repeat(50);
  const island = { ...fields, page: '' };
  const bytes = encodeIslandsResponse([
    prepareRenderResponse(html, '', island),
    { code: 'RENDER_ERR_PAGE_THREW', message: 'threw' },
    encodeRenderResponse(html, '', island),
  ]);
  assert.equal(bytes.buffer.byteLength, HEADROOM + bytes.byteLength, 'the buffer is the headroom and the message (transferable as is)');
  const { islands } = /** @type {any} */ (RenderIslandsResponse.toObject(RenderIslandsResponse.decode(bytes), { longs: Number, enums: String }));
  assert.equal(islands.length, 3);
  assert.deepEqual(islands[0], islands[2]);
  assert.equal(Buffer.from(islands[0].rendered.html).toString('utf8'), html);
  assert.deepEqual(islands[1].error, { code: 'RENDER_ERR_PAGE_THREW', message: 'threw' });
});
