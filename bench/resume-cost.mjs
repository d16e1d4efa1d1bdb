// What React's part of a partially prerendered page costs, in one thread, no pool, no hop:
// the demo's reviews page prerendered once with its two values per request as holes, then
// resumed with them settled, against the same page rendered whole with them settled.
//   renderer/node_modules/.bin/node bench/resume-cost.mjs [renders]   (after make build)
import { Writable } from 'node:stream';
import { setImmediate as nextTurn, setTimeout as later } from 'node:timers/promises';

const bundle = await import(new URL('../app/dist/server/server.js', import.meta.url).href);
const renders = Number(process.argv[2] ?? 2000);
const entry = bundle.pages['product-reviews'];
const { props } = await entry.load({ params: { id: '1' }, props: {}, url: '/products/1/reviews', query: {}, variants: {} });
const propsJson = JSON.stringify(props);

// The prerender as the renderer's worker stops it (worker/prerender.js).
const controller = new AbortController();
const pending = new Promise(() => {});
const prerendered = bundle.prerenderToNodeStream(bundle.createElement(entry.component, { ...props, deferred: { cart: pending, reviews: pending } }),
  { signal: controller.signal, onError() {} });
await nextTurn();
await later(0);
controller.abort(new Error('the holes'));
const { prelude, postponed } = await prerendered;
for await (const _ of prelude);
const state = JSON.stringify(postponed);

// The product's reviews, as the bundle's own warm-up gives them.
const reviews = bundle.warmup.find((w) => w.page === 'product-reviews').deferred.reviews;
/** A promise as React's use() reads at once. */
const settled = (value) => Object.assign(Promise.resolve(value), { status: 'fulfilled', value });
const element = () => bundle.createElement(entry.component, {
  ...JSON.parse(propsJson),
  deferred: { cart: settled({ user: 'bench', quantity: 2 }), reviews: settled(reviews) },
});
/** Pipes one render into a counting sink; resolves with the bytes written. */
const written = (start) => new Promise((resolve) => {
  let bytes = 0;
  const sink = new Writable({ write(chunk, _, done) { bytes += chunk.length; done(); }, final(done) { resolve(bytes); done(); } });
  const stream = start({ onShellReady() { stream.pipe(sink); }, onError() {} });
});
const runs = {
  resume: () => written((o) => bundle.resumeToPipeableStream(element(), JSON.parse(state), o)),
  whole: () => written((o) => bundle.renderToPipeableStream(element(), o)),
};
const result = { props_bytes: propsJson.length, postponed_bytes: state.length };
for (const [name, run] of Object.entries(runs)) {
  for (let i = 0; i < 300; i++) await run(); // the JIT's
  const began = performance.now();
  let bytes = 0;
  for (let i = 0; i < renders; i++) bytes = await run();
  result[name] = { ms: +((performance.now() - began) / renders).toFixed(3), bytes };
}
console.log(JSON.stringify(result));
