// SIGHUP reloads the bundle (make dev sends it after each rebuild); one that
// comes while the workers are still loading is carried out once they are warm.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { runRenderer, tempDir } from './helpers.js';

const SLOW_WARMUP = fileURLToPath(new URL('./fixtures/slow-warmup.js', import.meta.url));

test('SIGHUP during the start: the workers reload once warm, and the process lives on', async (t) => {
  const renderer = runRenderer([], {
    SSR_RENDERER_GRPC_ADDRESS: `unix://${join(tempDir(t), 'renderer.sock')}`,
    SSR_RENDERER_HTTP_LISTEN: '127.0.0.1:0',
    SSR_RENDERER_BUNDLE: SLOW_WARMUP,
    SSR_RENDERER_THREADS: '1',
    // 2 x 600 ms of warm-up: the signal comes well before the workers are warm.
    SSR_RENDERER_WARMUP_ROUNDS: '2',
  });
  t.after(() => renderer.child.kill('SIGKILL'));
  await renderer.waitForLine((l) => l.msg === 'listening' && l.listener === 'http');
  renderer.child.kill('SIGHUP');
  await renderer.waitForLine((l) => l.msg === 'reloaded: every worker runs the bundle');

  const at = (/** @type {(l: Record<string, any>) => boolean} */ match) => renderer.lines.findIndex(match);
  const signal = at((l) => l.msg === 'signal received' && l.signal === 'SIGHUP');
  const ready = at((l) => l.msg === 'ready');
  assert.ok(signal !== -1 && signal < ready, 'the signal came before the workers were warm');
  assert.ok(at((l) => l.msg === 'worker retired' && l.reason === 'reload') > ready);

  renderer.child.kill('SIGTERM');
  assert.equal((await renderer.exited).code, 0);
});
