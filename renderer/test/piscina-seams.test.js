// The pinned Piscina's behaviour that the pool relies on beyond its API
// (src/pool/piscina-seams.js), held on a bare Piscina: a token reaches the
// loadBalancer and not the worker, and startOneMore grows the pool by exactly
// one worker.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Piscina } from 'piscina';
import { startOneMore, tokenOf, withToken } from '../src/pool/piscina-seams.js';
import { tempDir } from './helpers.js';

test('tokens reach the balancer only, and startOneMore adds one worker', async (t) => {
  const file = join(tempDir(t), 'echo.mjs');
  writeFileSync(file, 'export default (task) => Object.getOwnPropertySymbols(task).length + Object.keys(task).length;\n');
  /** @type {Array<import('../src/pool/piscina-seams.js').Token | null>} */
  const seen = [];
  const piscina = new Piscina({
    filename: file, minThreads: 1, maxThreads: 1, idleTimeout: Infinity, atomics: 'disabled',
    loadBalancer: (task, workers) => {
      const token = tokenOf(/** @type {any} */ (task));
      seen.push(token);
      if (token?.probe) return null;
      return workers.find((w) => w.currentUsage === 0) ?? null;
    },
  });
  t.after(() => piscina.destroy());

  // The worker sees one plain key: the symbol-keyed token stayed behind.
  assert.equal(await piscina.run(withToken({ page: 'home' }, { id: 3 })), 1);
  assert.deepEqual(seen.at(-1), { id: 3 });

  assert.equal(piscina.threads.length, 1);
  assert.equal(startOneMore(piscina, 1), true);
  assert.equal(piscina.threads.length, 2);
  assert.deepEqual(seen.at(-1), { id: 0, probe: true });
  assert.equal(piscina.options.maxThreads, 1, 'maxThreads is back');
  assert.equal(piscina.queueSize, 0, 'the probe left no task behind');
});
