#!/usr/bin/env node
// What atomics: 'disabled' (needed for GC observers and the control port in
// idle workers) costs against Piscina's default 'sync':
// closed-loop renders of the demo home page through src/worker/worker.js, both
// modes alternated. `node bench/atomics.js [seconds] [rounds]`
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';

const seconds = Number(process.argv[2] ?? 4);
const rounds = Number(process.argv[3] ?? 2);
const bundle = fileURLToPath(new URL('../test/fixtures/dist/server.js', import.meta.url));

/** @param {'sync' | 'disabled'} atomics */
async function measure(atomics) {
  const pool = new Piscina({
    filename: new URL('../src/worker/worker.js', import.meta.url).href,
    minThreads: 2, maxThreads: 2, idleTimeout: Infinity, atomics,
    workerData: { bundle, warmupRounds: 3 },
  });
  await new Promise((resolve) => pool.once('message', () => pool.once('message', resolve)));
  let done = 0;
  const until = performance.now() + seconds * 1000;
  const task = { page: 'home', url: '/', params: {}, variants: {} };
  await Promise.all([0, 1, 2, 3].map(async () => {
    while (performance.now() < until) {
      const signal = new AbortController().signal;
      await pool.run(task, { signal });
      done++;
    }
  }));
  await pool.destroy();
  return done / seconds;
}

for (let i = 0; i < rounds; i++) {
  for (const mode of /** @type {const} */ (['sync', 'disabled'])) {
    console.log(JSON.stringify({ atomics: mode, rendersPerSecond: Math.round(await measure(mode)) }));
  }
}
