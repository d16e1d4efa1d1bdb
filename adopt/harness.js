// The adoption tests' harness (adopt.test.js on chi, gin.test.js on Gin): a Go team's shop
// set up in a temporary directory outside this tree from testdata/ (its Go module, its React
// app with the renderer installed from the tarball npm pack makes of renderer/), its
// processes, and what the tests read of its documents.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { CHROMIUM, CHROMIUM_ARGS, OWNED_BY_REACT } from '../app/test/browser.js';

export const repoDir = path.resolve(import.meta.dirname, '..');
/** The React app both shops use, and the chi shop's Go server. */
const myshop = path.join(import.meta.dirname, 'testdata', 'myshop');
/** The app's typecheck, at the versions this repository's own uses. */
const TYPESCRIPT = `typescript@${JSON.parse(readFileSync(path.join(repoDir, 'renderer', 'package.json'), 'utf8')).devDependencies.typescript}`;
const REACT_TYPES = `@types/react@${JSON.parse(readFileSync(path.join(repoDir, 'app', 'package.json'), 'utf8')).devDependencies['@types/react']}`;
/** What the team runs to build its app (docs/app-contract.md). */
export const BUILD_ARGS = ['--no', '--', 'sidecar-ssr-build', '--pages', 'src/pages.jsx', '--client', 'src/client.jsx', '--outdir', 'dist'];
/** The pinned Node 26: its directory goes first on the PATH of every npm, npx and bin call. */
const NODE = path.join(repoDir, 'renderer', 'node_modules', '.bin', 'node');
export const NODE_PATH_ENV = { PATH: `${path.dirname(NODE)}${path.delimiter}${process.env.PATH}` };

// Deadlines, each generous for a shared 2-core machine.
export const INSTALL_MS = 120_000; // npm pack + npm install, go mod tidy, each build
export const GO_BUILD_MS = 150_000; // the first build of modernc.org/sqlite is about a minute
export const START_MS = 30_000; // a process's start (the renderer's warm-up: READY_MS)
export const READY_MS = 60_000;
export const STEP_MS = 10_000; // one wait in the browser
export const RELOAD_MS = 3_000; // the Go side re-reads the manifest about every second
export const BUNDLE_REFRESH_MS = 17_000; // the Go side asks for the renderer's bundle every 15 s

// ---------------------------------------------------------------------------------------
// Processes: each in its own process group, its output kept; all killed at the end.

/** @type {Set<import('node:child_process').ChildProcess>} */
export const children = new Set();
export function killGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}
process.once('exit', () => {
  for (const child of children) killGroup(child, 'SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    for (const child of children) killGroup(child, 'SIGKILL');
    process.exit(128 + os.constants.signals[signal]);
  });
}

/**
 * Starts `file args` in its own process group, keeping stdout and stderr.
 * @returns {{name: string, child: import('node:child_process').ChildProcess, stdout: string,
 *   stderr: string, output: string, exited: {code: number|null, signal: string|null}|null,
 *   exit: Promise<{code: number|null, signal: string|null}>, waiters: Set<() => void>}}
 */
export function startProcess(name, file, args, { cwd, env = {} } = {}) {
  const child = spawn(file, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  children.add(child);
  const proc = { name, child, stdout: '', stderr: '', output: '', exited: null, waiters: new Set() };
  for (const stream of ['stdout', 'stderr']) {
    child[stream].on('data', (chunk) => {
      proc[stream] += chunk;
      proc.output += chunk;
      for (const check of proc.waiters) check();
    });
  }
  proc.exit = new Promise((resolve) => {
    child.once('error', (error) => {
      proc.output += `\n(spawn failed: ${error.message})\n`;
    });
    child.once('close', (code, signal) => {
      proc.exited = { code, signal };
      children.delete(child);
      for (const check of proc.waiters) check();
      resolve(proc.exited);
    });
  });
  return proc;
}

/**
 * The receipt page's island, hydrated: React owns its button, and a click counts (the
 * teapots left go from 3 to 2).
 * @param {import('playwright-core').Page} page
 * @param {string[]} problems what the browser reported so far, for the failure message
 */
export async function reserveOnce(page, problems) {
  const button = '[data-testid="reserve"]';
  await poll(
    () => page.evaluate(`(${OWNED_BY_REACT})(document.querySelector('${button}'))`),
    STEP_MS,
    () => `React never took over the island (not hydrated); the browser reported:\n${problems.join('\n') || '(nothing)'}\n`,
  );
  await page.locator(button).click();
  await poll(async () => /^2 more teapot/.test(await page.locator('[data-testid="stock"]').textContent() ?? ''), STEP_MS, () => 'the island did not count the click');
}

/** The last lines of a process's output, for failure messages. */
export function tail(proc, lines = 25) {
  if (!proc) return '';
  const last = proc.output.trimEnd().split('\n').slice(-lines).join('\n');
  return `--- last ${lines} lines of ${proc.name}${proc.exited ? ` (exited ${JSON.stringify(proc.exited)})` : ''}:\n${last}\n`;
}

/** Resolves with the first match of `pattern` in the output; rejects on exit or after ms. */
export function waitOutput(proc, pattern, ms) {
  return new Promise((resolve, reject) => {
    const done = (fn, value) => {
      proc.waiters.delete(check);
      clearTimeout(timer);
      fn(value);
    };
    const check = () => {
      const match = proc.output.match(pattern);
      if (match) done(resolve, match);
      else if (proc.exited) done(reject, new Error(`${proc.name} exited before printing ${pattern}\n${tail(proc)}`));
    };
    const timer = setTimeout(() => done(reject, new Error(`${proc.name} printed no ${pattern} within ${ms} ms\n${tail(proc)}`)), ms);
    proc.waiters.add(check);
    check();
  });
}

/** Resolves with the exit once the process has exited; rejects after ms. */
export async function waitExit(proc, ms) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${proc.name} did not exit within ${ms} ms\n${tail(proc)}`)), ms);
  });
  try {
    return await Promise.race([proc.exit, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs a command to its end; rejects with its output when it fails or takes over ms. */
export async function run(name, file, args, { cwd, env, ms }) {
  const started = Date.now();
  const proc = startProcess(name, file, args, { cwd, env });
  let exited;
  try {
    exited = await waitExit(proc, ms);
  } catch (error) {
    killGroup(proc.child, 'SIGKILL');
    throw error;
  }
  if (exited.code !== 0) throw new Error(`${name} failed (${JSON.stringify(exited)})\n${tail(proc, 40)}`);
  process.stderr.write(`# ${name}: ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return proc;
}

/** Stops a process with signal, then SIGKILLs its group if it is still there after ms. */
export async function stopProcess(proc, signal = 'SIGTERM', ms = 10_000) {
  if (!proc || proc.exited) return;
  proc.child.kill(signal);
  try {
    await waitExit(proc, ms);
  } catch {
    killGroup(proc.child, 'SIGKILL');
    await proc.exit;
  }
}

/** Polls fn until it returns a truthy value; rejects with what() after ms. */
export async function poll(fn, ms, what) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`${what()} within ${ms} ms${last ? ` (last error: ${last.message})` : ''}`);
    await delay(100);
  }
}

/** Whether process pid still runs. */
export function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------
// Documents.

/** The nonce of a `script-src 'nonce-…'` policy. */
export function cspNonce(response) {
  const csp = response.headers.get('content-security-policy');
  assert.ok(csp, 'the response has no Content-Security-Policy header');
  const match = csp.match(/script-src[^;]*'nonce-([^']+)'/);
  assert.ok(match, `no script-src nonce in ${csp}`);
  return match[1];
}

/** The /assets/ URLs a document links: <script src> and <link href>. */
export function linkedAssets(html) {
  const urls = [];
  for (const [, url] of html.matchAll(/<script\b[^>]*\bsrc="(\/assets\/[^"]+)"/g)) urls.push(url);
  for (const [, url] of html.matchAll(/<link\b[^>]*\bhref="(\/assets\/[^"]+)"/g)) urls.push(url);
  return urls;
}

// ---------------------------------------------------------------------------------------

/** Why the test cannot run (a message saying what to do), or null. */
export function missingPrerequisite() {
  if (!existsSync(CHROMIUM)) return `${CHROMIUM} is missing: run \`make test-adopt\`, which installs Chromium`;
  if (!existsSync(NODE)) return 'renderer/node_modules is missing: run `make test-adopt` (npm ci in renderer/)';
  if (!existsSync(path.join(repoDir, 'app', 'node_modules', 'playwright-core'))) {
    return 'app/node_modules/playwright-core is missing: run `make test-adopt` (npm ci in app/)';
  }
  const pkg = JSON.parse(readFileSync(path.join(repoDir, 'renderer', 'package.json'), 'utf8'));
  for (const bin of ['sidecar-ssr-renderer', 'sidecar-ssr-build']) {
    if (!pkg.bin?.[bin]) return `renderer/package.json has no bin ${bin}`;
  }
  return null;
}


/**
 * Sets up and starts a shop as its team would: in a new temporary directory, a Go module
 * example.com/myshop (mainFile, a file of testdata/, as main.go; requires, "path version"
 * lines beside the edge module, replaced by this checkout, and the demo shop's SQLite
 * driver) and the React app of testdata/myshop with the renderer from its npm pack tarball,
 * built with the shipped build; then the renderer through npx and the Go server. Chromium
 * starts meanwhile.
 * @param {{mainFile: string, requires: string[], files?: Record<string, string>}} shop
 *   files: more files of testdata/, by their path in the module
 */
export async function startShop({ mainFile, requires, files = {} }) {
  const started = Date.now();
  const tmpDir = mkdtempSync(path.join(os.tmpdir(), 'sidecar-ssr-adopt-'));
  const appDir = path.join(tmpDir, 'myshop');
  const socket = path.join(tmpDir, 'r.sock');
  mkdirSync(appDir);
  for (const file of ['package.json', 'jsconfig.json']) cpSync(path.join(myshop, file), path.join(appDir, file));
  cpSync(path.join(myshop, 'src'), path.join(appDir, 'src'), { recursive: true });
  for (const [to, from] of Object.entries({ 'main.go': mainFile, ...files })) {
    cpSync(path.join(import.meta.dirname, 'testdata', from), path.join(appDir, to), { recursive: true });
  }

  // The user's go.mod: the edge module through a replace to this checkout, and the
  // sqlite driver at the version the demo shop uses.
  const shopMod = readFileSync(path.join(repoDir, 'shop', 'go.mod'), 'utf8');
  const goLine = shopMod.match(/^go \S+$/m)?.[0];
  const sqlite = shopMod.match(/^\s*(modernc\.org\/sqlite v\S+)/m)?.[1];
  assert.ok(goLine && sqlite, 'shop/go.mod has no go line or no modernc.org/sqlite requirement');
  writeFileSync(path.join(appDir, 'go.mod'), [
    'module example.com/myshop',
    '',
    goLine,
    '',
    // The React app lives beside the Go code; its node_modules is not Go's business.
    'ignore ./node_modules',
    '',
    'require (',
    '\tgithub.com/sidecar-ssr/sidecar-ssr/edge v0.0.0',
    ...requires.map((r) => `\t${r}`),
    `\t${sqlite}`,
    ')',
    '',
    `replace github.com/sidecar-ssr/sidecar-ssr/edge => ${path.join(repoDir, 'edge')}`,
    '',
  ].join('\n'));

  const { chromium } = createRequire(path.join(repoDir, 'app', 'package.json'))('playwright-core');
  const browserLaunch = chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 30_000 });
  try {
    return await startProcesses(tmpDir, appDir, socket, browserLaunch, started);
  } catch (error) {
    // Nothing else holds the browser: left running, it would keep the test's process alive.
    await browserLaunch.then((browser) => browser.close(), () => {});
    throw error;
  }
}

/** The rest of startShop: the installs and builds, then the renderer and the Go server. */
async function startProcesses(tmpDir, appDir, socket, browserLaunch, started) {
  const env = NODE_PATH_ENV;
  let manifest;
  await Promise.all([
    (async () => {
      const packDir = path.join(tmpDir, 'pack');
      mkdirSync(packDir);
      await run('npm pack (renderer/)', 'npm', ['pack', '--pack-destination', packDir], { cwd: path.join(repoDir, 'renderer'), env, ms: INSTALL_MS });
      const tarballs = readdirSync(packDir).filter((f) => f.endsWith('.tgz'));
      assert.equal(tarballs.length, 1, `npm pack made ${tarballs.join(', ') || 'no tarball'}`);
      await run('npm install', 'npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', path.join(packDir, tarballs[0]), 'react@19.3.1', 'react-dom@19.3.1'], { cwd: appDir, env, ms: INSTALL_MS });
      await run('npm install --save-dev', 'npm', ['install', '--save-dev', '--no-audit', '--no-fund', '--prefer-offline', TYPESCRIPT, REACT_TYPES], { cwd: appDir, env, ms: INSTALL_MS });
      await run('sidecar-ssr-build', 'npx', BUILD_ARGS, { cwd: appDir, env, ms: INSTALL_MS });
      manifest = JSON.parse(readFileSync(path.join(appDir, 'dist', 'client', 'manifest.json'), 'utf8'));
    })(),
    (async () => {
      // The team runs `go get -tool github.com/sidecar-ssr/sidecar-ssr/edge/cmd/ssr-types`
      // (docs/go.md); go get asks the module proxy, which has no copy of a module replaced
      // by a checkout, so the test writes the line go get would.
      await run('go mod edit -tool', 'go', ['mod', 'edit', '-tool=github.com/sidecar-ssr/sidecar-ssr/edge/cmd/ssr-types'], { cwd: appDir, ms: INSTALL_MS });
      await run('go mod tidy', 'go', ['mod', 'tidy'], { cwd: appDir, ms: INSTALL_MS });
      await run('go build', 'go', ['build', '-o', 'myshop', '.'], { cwd: appDir, ms: GO_BUILD_MS });
      await run('go generate', 'go', ['generate', './...'], { cwd: appDir, ms: GO_BUILD_MS });
    })(),
  ]);

  // As the team runs it (docs/app-contract.md): through npx, so npm and a shell stand in
  // front of the command, which starts node again with its flags.
  const renderer = startProcess('renderer', 'npx', [
    '--no', '--', 'sidecar-ssr-renderer', '--bundle', 'dist/server/server.js', '--socket', socket, '--http-listen', '127.0.0.1:0',
  ], { cwd: appDir, env });
  // pino: {"pid":N,...,"listener":"http","address":"127.0.0.1:PORT",...,"msg":"listening"}
  const [, line] = await waitOutput(renderer, /^(\{.*"listener":"http".*\})\n/m, START_MS);
  const httpAddress = JSON.parse(line).address;
  // The renderer's own process, in a process group of its own: the one to signal.
  const rendererPid = JSON.parse(line).pid;
  assert.ok(httpAddress, `no address in ${line}`);
  await poll(async () => (await fetch(`http://${httpAddress}/readyz`)).status === 200, READY_MS, () => `the renderer's /readyz did not answer 200`);

  const server = startProcess('myshop', path.join(appDir, 'myshop'), [], { cwd: appDir, env: { MYSHOP_RENDERER_SOCKET: socket } });
  const baseURL = `http://${(await waitOutput(server, /listening on (\S+)/, START_MS))[1]}`;
  process.stderr.write(`# stack up: ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return {
    tmpDir, appDir, socket, renderer, server, baseURL, manifest, rendererPid,
    rendererMetrics: `http://${httpAddress}/metrics`, browserLaunch,
  };
}

/**
 * A test step whose failure carries the last lines of the shop's processes.
 * @param {() => Array<ReturnType<typeof startProcess> | undefined>} procs
 */
export function withLogsOf(procs) {
  return (fn) => async (...args) => {
    try {
      return await fn(...args);
    } catch (error) {
      const logs = procs().map((p) => tail(p)).join('');
      if (error && typeof error === 'object' && logs) error.message += `\n${logs}`;
      throw error;
    }
  };
}

/**
 * Stops what startShop started, whatever did, and removes its directory.
 * @param {Partial<Awaited<ReturnType<typeof startShop>>> | undefined} shop
 */
export async function stopShop(shop) {
  const launched = await shop?.browserLaunch?.catch(() => null);
  await launched?.close().catch(() => {});
  await Promise.all([shop?.server, shop?.renderer].map((p) => stopProcess(p)));
  for (const child of children) killGroup(child, 'SIGKILL');
  if (shop?.rendererPid && alive(shop.rendererPid)) process.kill(shop.rendererPid, 'SIGKILL');
  if (shop?.tmpDir) rmSync(shop.tmpDir, { recursive: true, force: true });
}
