// Error responses: the gRPC status, the message the caller sees (never a
// stack), and the `ssr-error` trailer, for each failure the caller or the page causes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { render, startRenderer } from './helpers.js';

test('render errors map to gRPC status with an ssr-error trailer', async (t) => {
  const { client, logs } = await startRenderer(t);

  const cases = [
    { name: 'unknown page', request: { page: 'no-such-page' }, code: status.NOT_FOUND, trailer: 'RENDER_ERR_PAGE_NOT_FOUND', details: /no-such-page/ },
    { name: 'props_json an array', request: { page: 'echo', propsJson: Buffer.from('[1,2]') }, code: status.INVALID_ARGUMENT, trailer: 'RENDER_ERR_INVALID_PROPS', details: /JSON object/ },
    { name: 'props_json not JSON', request: { page: 'echo', propsJson: Buffer.from('not json') }, code: status.INVALID_ARGUMENT, trailer: 'RENDER_ERR_INVALID_PROPS', details: /not valid JSON/ },
    { name: 'component throws', request: { page: 'throws' }, code: status.INTERNAL, trailer: 'RENDER_ERR_PAGE_THREW', details: /^fixture: page threw on purpose$/ },
    { name: 'load throws', request: { page: 'throws-in-load' }, code: status.INTERNAL, trailer: 'RENDER_ERR_PAGE_THREW', details: /^fixture: load threw on purpose$/ },
  ];
  for (const c of cases) {
    await t.test(c.name, async () => {
      const { error } = await render(client, c.request);
      assert.ok(error, 'the call fails');
      assert.equal(error.code, c.code);
      assert.match(error.details, c.details);
      assert.doesNotMatch(error.details, /\n\s+at /, 'no stack goes over the wire');
      assert.deepEqual(error.metadata.get('ssr-error'), [c.trailer]);
    });
  }

  await t.test('a page that threw is logged with its stack', () => {
    const line = logs.find((l) => l.code === 'RENDER_ERR_PAGE_THREW' && l.page === 'throws');
    assert.ok(line, 'logged');
    assert.equal(line.level, 50);
    assert.equal(line.err.message, 'fixture: page threw on purpose');
    assert.match(line.err.stack, /Throws/, "the page's own stack");
  });

  await t.test('the pool is unharmed: the next render succeeds', async () => {
    const { response } = await render(client, { page: 'home' });
    assert.equal(response?.status, 200);
  });
});
