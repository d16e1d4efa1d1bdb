// The unix socket at start: a missing directory is created, a socket file
// left by a killed renderer is replaced, a live one is not.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, lstatSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { once } from 'node:events';
import { test } from 'node:test';
import { render, startRenderer, tempDir } from './helpers.js';

test('creates the socket directory', async (t) => {
  const path = join(tempDir(t), 'a', 'b', 'renderer.sock');
  const { client } = await startRenderer(t, { threads: 1, grpc_address: `unix://${path}` });
  assert.ok(lstatSync(path).isSocket());
  assert.equal((await render(client, { page: 'home' })).response?.status, 200);
});

test('a stale socket file (its process was SIGKILLed) is replaced', async (t) => {
  const path = join(tempDir(t), 'renderer.sock');
  // A process that binds the path and dies without unlinking it.
  const child = spawn(process.execPath, ['-e', `require('node:net').createServer().listen(process.argv[1], () => console.log('up'))`, path], { stdio: ['ignore', 'pipe', 'inherit'] });
  await once(child.stdout, 'data');
  child.kill('SIGKILL');
  await once(child, 'exit');
  assert.ok(lstatSync(path).isSocket(), 'the dead process left its socket file');

  const { client } = await startRenderer(t, { threads: 1, grpc_address: `unix://${path}` });
  assert.equal((await render(client, { page: 'home' })).response?.status, 200);
});

test('a live socket at the path: a clear error, and the socket is left alone', async (t) => {
  const path = join(tempDir(t), 'renderer.sock');
  const other = createServer((socket) => socket.destroy());
  other.listen(path);
  await once(other, 'listening');
  t.after(() => other.close());

  await assert.rejects(startRenderer(t, { threads: 1, grpc_address: `unix://${path}` }), {
    message: `gRPC: another renderer is listening on unix://${path}`,
  });
  assert.ok(existsSync(path));
});

test('a regular file at the path is not removed', async (t) => {
  const path = join(tempDir(t), 'renderer.sock');
  writeFileSync(path, 'precious');
  await assert.rejects(startRenderer(t, { threads: 1, grpc_address: `unix://${path}` }), /exists and is not a socket/);
  assert.ok(lstatSync(path).isFile());
});

test('TCP with port 0 reports the port it bound', async (t) => {
  const { app, client } = await startRenderer(t, { threads: 1, grpc_address: '127.0.0.1:0' });
  assert.match(app.grpcAddress, /^127\.0\.0\.1:[1-9]\d*$/);
  assert.equal((await render(client, { page: 'home' })).response?.status, 200);
});
