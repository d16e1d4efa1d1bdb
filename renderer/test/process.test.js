// The renderer as a process: the start-up log lines the Go end-to-end tests
// parse, exit codes, and SIGTERM.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';
import { test } from 'node:test';
import { stringify } from 'yaml';
import { FIXTURE_BUNDLE, tempDir } from './helpers.js';

const MAIN = fileURLToPath(new URL('../src/main.js', import.meta.url));

/**
 * @param {string[]} args
 * @param {Record<string, string>} env added to a minimal environment
 */
function run(args, env = {}) {
  const child = spawn(process.execPath, [MAIN, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  /** @type {Array<Record<string, any>>} */
  const lines = [];
  /** @type {Array<() => void>} */
  const waiters = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(JSON.parse(line));
    for (const wake of waiters.splice(0)) wake();
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  const exited = once(child, 'exit').then(([code, signal]) => ({ code, signal, stderr }));
  /** @param {(line: Record<string, any>) => boolean} match */
  const waitForLine = async (match) => {
    for (;;) {
      const found = lines.find(match);
      if (found) return found;
      const exit = await Promise.race([new Promise((resolve) => waiters.push(() => resolve(null))), exited]);
      if (exit) throw new Error(`exited ${JSON.stringify(exit)} before the line; stdout: ${JSON.stringify(lines)}`);
    }
  };
  return { child, lines, waitForLine, exited };
}

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

  proc.child.kill('SIGTERM');
  const exit = await proc.exited;
  assert.equal(exit.code, 0, exit.stderr);
  assert.equal(existsSync(socket), false);
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
