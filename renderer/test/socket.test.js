// The unix socket at start: a missing directory is created (0700), one that
// another user could write to is refused, a socket file left by a killed
// renderer is replaced, a live one is not.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { once } from 'node:events';
import { test } from 'node:test';
import { render, startRenderer, tempDir } from './helpers.js';

test('creates the socket directory, the last component 0700', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'a', 'b', 'renderer.sock');
  const { client } = await startRenderer(t, { threads: 1, grpc_address: `unix://${path}` });
  assert.ok(lstatSync(path).isSocket());
  assert.equal(statSync(join(dir, 'a', 'b')).mode & 0o777, 0o700);
  assert.equal((await render(client, { page: 'home' })).response?.status, 200);
});

test('a socket directory of ours with mode 0755 is accepted', async (t) => {
  const dir = join(tempDir(t), 'sock');
  mkdirSync(dir);
  chmodSync(dir, 0o755);
  const { client } = await startRenderer(t, { threads: 1, grpc_address: `unix://${join(dir, 'renderer.sock')}` });
  assert.equal((await render(client, { page: 'home' })).response?.status, 200);
});

/** What every refusal of the socket directory says besides its reason. */
const REFUSAL = /^gRPC: refusing the socket directory .+ \(owner uid \d+, this process runs as uid \d+\); another user could replace the socket\. Remove it and let the renderer create it \(mode 0700\), or point renderer\.grpc_address at a directory of its own$/;

test('a socket directory writable by others is refused', async (t) => {
  const dir = join(tempDir(t), 'sock');
  mkdirSync(dir);
  chmodSync(dir, 0o777);
  await assert.rejects(startRenderer(t, { threads: 1, grpc_address: `unix://${join(dir, 'renderer.sock')}` }), (err) => {
    assert.match(String(/** @type {Error} */ (err).message), REFUSAL);
    assert.match(String(/** @type {Error} */ (err).message), new RegExp(`^gRPC: refusing the socket directory ${dir}: it is writable by group or others \\(mode 0777\\)`));
    return true;
  });
  assert.ok(!existsSync(join(dir, 'renderer.sock')));
});

test('a symlinked socket directory is refused', async (t) => {
  const base = tempDir(t);
  mkdirSync(join(base, 'real'), { mode: 0o700 });
  symlinkSync(join(base, 'real'), join(base, 'sock'));
  await assert.rejects(startRenderer(t, { threads: 1, grpc_address: `unix://${join(base, 'sock', 'renderer.sock')}` }), (err) => {
    assert.match(String(/** @type {Error} */ (err).message), REFUSAL);
    assert.match(String(/** @type {Error} */ (err).message), /: it is a symbolic link \(/);
    return true;
  });
  assert.ok(!existsSync(join(base, 'real', 'renderer.sock')));
});

test('a file where the socket directory should be is refused', async (t) => {
  const dir = join(tempDir(t), 'sock');
  writeFileSync(dir, '');
  await assert.rejects(startRenderer(t, { threads: 1, grpc_address: `unix://${join(dir, 'renderer.sock')}` }), (err) => {
    assert.match(String(/** @type {Error} */ (err).message), REFUSAL);
    assert.match(String(/** @type {Error} */ (err).message), /: it is not a directory \(/);
    return true;
  });
});

test('a socket directory owned by another user is refused', async (t) => {
  if (process.geteuid?.() !== 0) {
    t.skip('needs root, to give a directory to another user');
    return;
  }
  const dir = join(tempDir(t), 'sock');
  mkdirSync(dir, { mode: 0o700 });
  chownSync(dir, 65534, 65534);
  await assert.rejects(startRenderer(t, { threads: 1, grpc_address: `unix://${join(dir, 'renderer.sock')}` }), (err) => {
    assert.match(String(/** @type {Error} */ (err).message), REFUSAL);
    assert.match(String(/** @type {Error} */ (err).message), /: it is owned by another user \(owner uid 65534, this process runs as uid 0\)/);
    return true;
  });
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
