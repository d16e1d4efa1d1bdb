// The renderer as a process: the start-up log lines the Go end-to-end tests
// parse, exit codes, and SIGTERM.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { stringify } from 'yaml';
import NODE_FLAGS from '../node-flags.json' with { type: 'json' };
import { FIXTURE_BUNDLE, runRenderer as run, tempDir } from './helpers.js';

test('start-up lines, then SIGTERM exits 0 and removes the socket', async (t) => {
  const dir = tempDir(t);
  const socket = join(dir, 'renderer.sock');
  const config = join(dir, 'ssr.yaml');
  writeFileSync(config, stringify({
    edge: { listen: ':8080' },
    renderer: { grpc_address: `unix://${socket}`, http_listen: '127.0.0.1:0', bundle: FIXTURE_BUNDLE, threads: 1 },
  }));
  const proc = run(['--config', config]);
  t.after(() => proc.child.kill('SIGKILL'));

  const grpcLine = await proc.waitForLine((l) => l.msg === 'listening' && l.listener === 'grpc');
  assert.equal(grpcLine.address, `unix://${socket}`);
  const httpLine = await proc.waitForLine((l) => l.msg === 'listening' && l.listener === 'http');
  assert.match(httpLine.address, /^127\.0\.0\.1:[1-9]\d*$/);
  await proc.waitForLine((l) => l.msg === 'ready');

  const health = await fetch(`http://${httpLine.address}/healthz`);
  assert.equal(health.status, 200);
  assert.equal((await fetch(`http://${httpLine.address}/readyz`)).status, 200);

  // Started without node-flags.json's flags (runRenderer passes none): a warning names each.
  const warning = await proc.waitForLine((l) => Array.isArray(l.missing));
  assert.deepEqual(warning.missing, NODE_FLAGS);

  proc.child.kill('SIGTERM');
  const exit = await proc.exited;
  assert.equal(exit.code, 0, exit.stderr);
  assert.equal(existsSync(socket), false);
});

test('npm start passes node-flags.json to node', () => {
  const start = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).scripts.start;
  assert.equal(start, `node ${NODE_FLAGS.join(' ')} src/main.js`);
});

test('SSR_CONFIG and env overrides; a TCP port 0 is logged as bound', async (t) => {
  const dir = tempDir(t);
  const config = join(dir, 'ssr.yaml');
  writeFileSync(config, stringify({ renderer: { bundle: FIXTURE_BUNDLE, threads: 1 } }));
  const proc = run([], { SSR_CONFIG: config, SSR_RENDERER_GRPC_ADDRESS: '127.0.0.1:0', SSR_RENDERER_HTTP_LISTEN: '127.0.0.1:0' });
  t.after(() => proc.child.kill('SIGKILL'));
  const grpcLine = await proc.waitForLine((l) => l.msg === 'listening' && l.listener === 'grpc');
  assert.match(grpcLine.address, /^127\.0\.0\.1:[1-9]\d*$/);
  await proc.waitForLine((l) => l.msg === 'ready');
  proc.child.kill('SIGINT');
  assert.equal((await proc.exited).code, 0);
});

test('a bad config exits 1 naming the key', async () => {
  const proc = run([], { SSR_RENDERER_THREADS: 'x' });
  const exit = await proc.exited;
  assert.equal(exit.code, 1);
  assert.equal(exit.stderr, 'config: renderer.threads: must be an integer >= 0 (got "x")\n');
});

test('a bundle that cannot load exits 1 with the reason', async (t) => {
  const dir = tempDir(t);
  const proc = run([], {
    SSR_RENDERER_BUNDLE: fileURLToPath(new URL('./fixtures/throws-at-import.js', import.meta.url)),
    SSR_RENDERER_GRPC_ADDRESS: `unix://${join(dir, 'renderer.sock')}`,
    SSR_RENDERER_HTTP_LISTEN: '127.0.0.1:0',
    SSR_RENDERER_THREADS: '1',
  });
  const exit = await proc.exited;
  assert.equal(exit.code, 1);
  const fatal = proc.lines.find((l) => l.level === 60);
  assert.match(fatal?.msg, /^start failed: worker \d+ could not load the bundle: .*fixture: bundle threw at import$/);
});

test('a heap cap too small for the bundle exits 1 naming renderer.max_old_generation_mb', async (t) => {
  const dir = tempDir(t);
  const proc = run([], {
    SSR_RENDERER_BUNDLE: FIXTURE_BUNDLE,
    SSR_RENDERER_GRPC_ADDRESS: `unix://${join(dir, 'renderer.sock')}`,
    SSR_RENDERER_HTTP_LISTEN: '127.0.0.1:0',
    SSR_RENDERER_THREADS: '1',
    SSR_RENDERER_MAX_OLD_GENERATION_MB: '4',
    SSR_RENDERER_MAX_YOUNG_GENERATION_MB: '1',
  });
  const exit = await proc.exited;
  assert.equal(exit.code, 1);
  assert.match(exit.stderr, /^config: renderer\.max_old_generation_mb: 4 MB is too small to load the bundle \(.*\)\n$/);
});
