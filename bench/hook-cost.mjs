// What the renderer's async hook costs a render (renderer/src/worker/renders.js: before/after
// on every callback, which turns V8's promise hooks on): the demo's home page rendered whole
// (renderPage) and streamed (renderToPipeableStream into a Writable that discards), each render
// in an AsyncLocalStorage as in a worker, in rounds that alternate the hook off and on.
//
//   node bench/hook-cost.mjs [--bundle app/dist/server/server.js] [--rounds 5] [--ms 1500]
import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { preparePage, renderPage } from '../renderer/src/worker/render-page.js';

const { values: opts } = parseArgs({
  options: {
    bundle: { type: 'string', default: 'app/dist/server/server.js' },
    rounds: { type: 'string', default: '5' },
    ms: { type: 'string', default: '1500' },
  },
});
const bundle = await import(pathToFileURL(resolve(opts.bundle)).href);
const task = { page: 'home', url: '/', params: {}, variants: {} };
const current = new AsyncLocalStorage();
let charged = 0;
let since = 0;
// The ledger's shape: read the render's context on entry, charge its time on exit.
const hook = createHook({
  before() {
    current.getStore();
    since = performance.now();
  },
  after() {
    charged += performance.now() - since;
  },
});

async function stream() {
  const prepared = await preparePage(bundle, task);
  await new Promise((done) => {
    const s = bundle.renderToPipeableStream(bundle.createElement(prepared.entry.component, prepared.elementProps), {
      onShellReady() {
        s.pipe(new Writable({ write(_chunk, _encoding, next) { next(); }, final(next) { done(undefined); next(); } }));
      },
    });
  });
}

/** @param {() => Promise<unknown>} render */
async function rate(render) {
  let n = 0;
  const end = performance.now() + Number(opts.ms);
  while (performance.now() < end) {
    await current.run({ id: ++n }, render);
  }
  return n / (Number(opts.ms) / 1000);
}

for (let i = 0; i < 200; i++) {
  await renderPage(bundle, task);
  await stream();
}
const rates = { whole: { off: [], on: [] }, streamed: { off: [], on: [] } };
for (let round = 0; round < Number(opts.rounds); round++) {
  for (const mode of /** @type {const} */ (['off', 'on'])) {
    if (mode === 'on') hook.enable();
    else hook.disable();
    rates.whole[mode].push(await rate(() => renderPage(bundle, task)));
    rates.streamed[mode].push(await rate(stream));
  }
}
hook.disable();
const median = (/** @type {number[]} */ a) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)];
for (const [kind, { off, on }] of Object.entries(rates)) {
  console.log(`${kind}: ${median(off).toFixed(0)} renders/s without the hook, ${median(on).toFixed(0)} with it (${(median(on) / median(off)).toFixed(3)}x)`);
}
