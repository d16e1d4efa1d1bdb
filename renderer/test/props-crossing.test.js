import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { renderPage } from '../src/worker/render-page.js';

// The edge embeds what these send back by the same cases (edge/internal/server/props_test.go).
const { cases } = JSON.parse(readFileSync(new URL('../../proto/testdata/props-crossing.json', import.meta.url), 'utf8'));

const Component = () => null;
/** @type {import('../src/worker/render-page.js').Bundle} */
const bundle = {
  pages: {
    plain: { component: Component },
    given: { component: Component, load: (ctx) => ({ props: ctx.props }) },
    own: { component: Component, load: (ctx) => ({ props: { ...ctx.props, b: 2 } }) },
    mutates: {
      component: Component,
      load: (ctx) => {
        ctx.props.b = 2;
        return undefined;
      },
    },
  },
  // The page's markup is the props it rendered with: what the browser hydrates must be those.
  createElement: (_type, props) => props,
  renderToString: (props) => JSON.stringify(props),
  renderToStaticMarkup: () => '',
};

for (const c of cases) {
  test(`props crossing: ${c.name}`, async () => {
    const task = { page: c.page, url: '/', params: {}, variants: {}, propsJson: new TextEncoder().encode(c.request) };
    if (c.error) {
      await assert.rejects(renderPage(bundle, task), (err) => err instanceof Error && err.message.includes(c.error));
      return;
    }
    const result = await renderPage(bundle, task);
    assert.equal(result.propsJson, c.response);
    assert.deepEqual(JSON.parse(result.html), JSON.parse(c.embedded), 'the page rendered with the props the edge embeds');
  });
}
