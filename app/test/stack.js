// The stack the browser tests drive (hydration.test.js, streaming.test.js): Chromium, the
// renderer, one edge per client build and the demo shops, started from the repository root
// with JSON logs on stdout, killed at the end whatever happens.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { CHROMIUM, launchBrowser } from './browser.js';

export const repoDir = path.resolve(import.meta.dirname, '..', '..');
export const paths = {
  node: path.join(repoDir, 'renderer', 'node_modules', '.bin', 'node'),
  renderer: path.join(repoDir, 'renderer', 'src', 'main.js'),
  edge: path.join(repoDir, 'bin', 'edge'),
  shop: path.join(repoDir, 'bin', 'shop'),
  bundle: path.join(repoDir, 'app', 'dist', 'server', 'server.js'),
};
/** The shops' admin token: purges need it, from loopback too. */
export const ADMIN_TOKEN = 'app-test-admin-token';

export const builds = [
  { name: 'production', dir: path.join(repoDir, 'app', 'dist', 'client') },
  { name: 'development', dir: path.join(repoDir, 'app', 'dist', 'client-dev') },
];

/** Why a browser test cannot run (a message saying what to do), or null. */
function missingPrerequisite() {
  if (!existsSync(CHROMIUM)) {
    return `${CHROMIUM} is missing: install Chromium (apt-get install -y chromium), or run \`make test-browser\`, which installs it`;
  }
  for (const need of [paths.node, paths.edge, paths.shop, paths.bundle, ...builds.map((b) => path.join(b.dir, 'manifest.json'))]) {
    if (!existsSync(need)) {
      return `${path.relative(repoDir, need)} is missing: run \`make test-browser\` (it builds the edge, the shop, the app and the development client)`;
    }
  }
  return null;
}

/** The prerequisites as a test of their own, so that a missing browser counts as a failure, not only as cancelled tests. */
export function testPrerequisites() {
  test('prerequisites: Chromium, the edge and shop binaries, the server bundle and both client builds', () => {
    const missing = missingPrerequisite();
    if (missing) assert.fail(missing);
  });
}

/**
 * A started stack: every process listens on 127.0.0.1:0 and shares one renderer over a unix
 * socket in tmpDir.
 * @typedef {object} Stack
 * @property {string} tmpDir
 * @property {import('playwright-core').Browser} browser
 * @property {any} renderer its process (startProcess)
 * @property {Record<string, {proc: any, url: string, manifest: any}>} edges one per client
 *   build, by the build's name, with the build's manifest
 * @property {Record<string, {proc: any, url: string, manifest: any}>} shops by the name
 *   startStack was given, each with the production client's manifest
 * @property {() => Promise<void>} close stops what started (whatever did), and removes tmpDir
 */

/**
 * Starts Chromium, the renderer (two threads, the demo's server bundle), one edge per client
 * build and each demo shop (bin/shop, the production client, its own database) at once. When
 * any of them does not come up it stops what did, and throws.
 * @param {object} options
 * @param {string} options.name names the temporary directory
 * @param {Record<string, string>} [options.rendererEnv] more of the renderer's environment
 * @param {string} [options.edgeConfig] the edges' config file (SSR_CONFIG), its text
 * @param {Record<string, string>} [options.edgeEnv] more of each edge's environment
 * @param {Record<string, string[]>} [options.shops] the shops to start, by name: the flags
 *   of each beyond where it listens, its database, the renderer and its assets
 * @returns {Promise<Stack>}
 */
export async function startStack({ name, rendererEnv = {}, edgeConfig, edgeEnv = {}, shops = {} }) {
  const missing = missingPrerequisite();
  if (missing) throw new Error(missing);
  const tmpDir = mkdtempSync(path.join(os.tmpdir(), `sidecar-ssr-${name}-`));
  const socket = `unix://${path.join(tmpDir, 'r.sock')}`;
  const production = /** @type {typeof builds[number]} */ (builds.find((b) => b.name === 'production'));
  const manifestOf = (dir) => JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
  /** @param {any} proc */
  const listening = async (proc) => `http://${(await waitLog(proc, { msg: 'listening', listener: 'public' })).address}`;
  // Launched alongside the processes; close() closes it even when one of them fails.
  const browserLaunch = launchBrowser();
  /** @type {Stack} */
  const stack = {
    tmpDir,
    browser: /** @type {any} */ (undefined),
    renderer: undefined,
    edges: {},
    shops: {},
    async close() {
      const launched = await browserLaunch.catch(() => null);
      await launched?.close().catch(() => {});
      await Promise.all([stack.renderer, ...[...Object.values(stack.edges), ...Object.values(stack.shops)].map((s) => s.proc)]
        .filter(Boolean).map(stopProcess));
      rmSync(tmpDir, { recursive: true, force: true });
    },
  };
  try {
    if (edgeConfig !== undefined) {
      const file = path.join(tmpDir, 'edge.yaml');
      writeFileSync(file, edgeConfig);
      edgeEnv = { SSR_CONFIG: file, ...edgeEnv };
    }
    stack.renderer = startProcess('renderer', paths.node, [paths.renderer], {
      SSR_RENDERER_GRPC_ADDRESS: socket,
      SSR_RENDERER_HTTP_LISTEN: '127.0.0.1:0',
      SSR_RENDERER_BUNDLE: paths.bundle,
      SSR_RENDERER_THREADS: '2',
      ...rendererEnv,
    });
    await Promise.all([
      waitLog(stack.renderer, { msg: 'ready' }, 60_000),
      ...builds.map(async (build) => {
        const proc = startProcess(`edge (${build.name})`, paths.edge, [], {
          SSR_EDGE_LISTEN: '127.0.0.1:0',
          SSR_EDGE_ADMIN_LISTEN: '127.0.0.1:0',
          SSR_EDGE_ASSETS_DIR: build.dir,
          SSR_RENDERER_GRPC_ADDRESS: socket,
          ...edgeEnv,
        });
        stack.edges[build.name] = { proc, url: '', manifest: manifestOf(build.dir) };
        stack.edges[build.name].url = await listening(proc);
      }),
      ...Object.entries(shops).map(async ([which, flags]) => {
        const proc = startProcess(`shop (${which})`, paths.shop, [
          '-listen', '127.0.0.1:0', '-admin-listen', '127.0.0.1:0', '-db', path.join(tmpDir, `shop-${which}.db`),
          '-renderer', socket, '-assets', production.dir, '-admin-token', ADMIN_TOKEN, ...flags,
        ], {});
        stack.shops[which] = { proc, url: '', manifest: manifestOf(production.dir) };
        stack.shops[which].url = await listening(proc);
      }),
    ]);
    stack.browser = await browserLaunch;
  } catch (err) {
    await stack.close();
    throw err;
  }
  return stack;
}

/** @type {Set<import('node:child_process').ChildProcess>} */
const children = new Set();
function killChildren() {
  for (const child of children) child.kill('SIGKILL');
}
process.once('exit', killChildren);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    killChildren();
    process.exit(128 + os.constants.signals[signal]);
  });
}

/** Starts a process whose stdout/stderr lines are kept (JSON lines parsed) for waitLog. */
export function startProcess(name, file, args, env) {
  const child = spawn(file, args, { cwd: repoDir, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  const proc = { name, child, output: '', lines: [], exited: null, waiters: new Set() };
  const onData = (chunk) => {
    const text = chunk.toString();
    proc.output += text;
    for (const line of text.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        proc.lines.push(JSON.parse(line));
      } catch {
        // a line split across chunks: the raw output still has it
      }
    }
    for (const check of proc.waiters) check();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  proc.exit = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      proc.exited = { code, signal };
      children.delete(child);
      for (const check of proc.waiters) check();
      resolve(proc.exited);
    });
  });
  return proc;
}

/** Resolves with the first log line that has every field of `want`. */
export function waitLog(proc, want, timeoutMs = 30_000) {
  return new Promise((resolve, reject) => {
    const matches = (line) => Object.entries(want).every(([key, value]) => line[key] === value);
    const done = (fn, value) => {
      proc.waiters.delete(check);
      clearTimeout(timer);
      fn(value);
    };
    const check = () => {
      const line = proc.lines.find(matches);
      if (line) done(resolve, line);
      else if (proc.exited) done(reject, new Error(`${proc.name} exited (${JSON.stringify(proc.exited)}) before logging ${JSON.stringify(want)}:\n${proc.output}`));
    };
    const timer = setTimeout(() => done(reject, new Error(`${proc.name}: no log line ${JSON.stringify(want)} within ${timeoutMs} ms:\n${proc.output}`)), timeoutMs);
    proc.waiters.add(check);
    check();
  });
}

export async function stopProcess(proc) {
  if (!proc || proc.exited) return;
  proc.child.kill('SIGKILL');
  await proc.exit;
}
