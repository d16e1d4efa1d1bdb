// max_request_mb bounds what grpc-js accepts. Over it the caller gets
// RESOURCE_EXHAUSTED from grpc-js itself, with no ssr-error trailer: that is
// how the edge tells it apart from RENDER_ERR_QUEUE_FULL (both are
// RESOURCE_EXHAUSTED; the trailer says which).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { render, startRenderer } from './helpers.js';

test('a request over max_request_mb is refused', async (t) => {
  const { client } = await startRenderer(t, { threads: 1, max_request_mb: 1 });
  const props = (/** @type {number} */ bytes) => Buffer.from(JSON.stringify({ pad: 'x'.repeat(bytes) }));

  const under = await render(client, { page: 'echo', propsJson: props(900 * 1024) });
  assert.equal(under.response?.status, 200);

  const over = await render(client, { page: 'echo', propsJson: props(1024 * 1024) });
  assert.equal(over.error?.code, status.RESOURCE_EXHAUSTED);
  assert.deepEqual(over.error?.metadata.get('ssr-error'), []);
});
