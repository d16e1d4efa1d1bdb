// Builds the demo app with esbuild (see docs/app-contract.md):
//
//   node build.mjs            dist/server/server.js + dist/client/{assets/*, manifest.json}
//   node build.mjs --dev      the same, with a development (unminified) React client build,
//                             which reports hydration mismatches in the browser
//   node build.mjs --dev --client-outdir dist/client-dev
//                             only the client build, into that folder (resolved from the
//                             working directory): a second client build beside dist/client,
//                             for the browser test; dist/server and dist/client are untouched
//   node build.mjs --fixture  only renderer/test/fixtures/dist/server.js, the renderer's
//                             test bundle (demo pages + pages that throw, loop, leak...)
//   node build.mjs --v8       only dist/v8/server.js: the same exports (src/server.js) as one
//                             classic script for a bare V8 isolate (bench/v8go), see buildV8
//   node build.mjs --watch [--dev] [--notify PID]
//                             dist/server and dist/client, then again after every change under
//                             src/ (make dev). A build that fails prints its errors and leaves
//                             dist/ as it was. Each file is replaced whole, the manifest last;
//                             the client's older files stay, for pages already in browsers.
//                             The server bundle is src/server-dev.js's: it carries the pages'
//                             props shapes, which the renderer checks props against.
//                             After a build that changed the server bundle, PID gets SIGHUP
//                             (scripts/run.sh, which passes it on to the renderer); the watch
//                             ends when PID does.
//
// Paths are resolved from this file, so it runs from any working directory. What every app's
// build shares (server and client options, the manifest, writing files) comes from the
// renderer package's build module, the one sidecar-ssr-build runs; this file adds the demo's
// own modes (--fixture, --v8, --watch, --client-outdir).
import { watch as watchFiles } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as esbuild from 'esbuild';
import { clientFiles, clientOptions, emit, serverOptions, withClientBuild } from '../renderer/build/index.js';

const appDir = path.dirname(fileURLToPath(import.meta.url));
const repoDir = path.resolve(appDir, '..');
const distDir = path.join(appDir, 'dist');
const fixtureDir = path.join(repoDir, 'renderer', 'test', 'fixtures');

/** What a build starts from: `entry`, wherever it lives, with React from app/node_modules. */
function source(entry) {
  return { entryPoints: [entry], absWorkingDir: appDir, reactDir: appDir };
}

/** @param {string} clientBuildId the client build the bundle goes with (withClientBuild) */
async function buildServer(clientBuildId) {
  const outDir = path.join(distDir, 'server');
  const outfile = path.join(outDir, 'server.js');
  await rm(outDir, { recursive: true, force: true });
  const result = await esbuild.build({ ...serverOptions({ ...source(path.join(appDir, 'src', 'server.js')), outfile }), write: false });
  await emit(withClientBuild(result.outputFiles, outfile, clientBuildId));
  return outfile;
}

/**
 * The server entry as a classic script for a bare V8 isolate (no modules, no require, no
 * Node or web APIs): an IIFE that assigns src/server.js's exports to `globalThis.SSR`.
 *
 * react-dom/server is pointed at React's legacy browser renderer, the file that provides
 * renderToString and renderToStaticMarkup. Its node build require()s Node builtins, and its
 * browser entry (server.browser.js) also loads the streaming renderer, which calls
 * `new TextEncoder()` and `new MessageChannel()` when it is evaluated; the legacy file
 * needs neither. react-dom/static (prerenderToNodeStream) is that streaming renderer too:
 * it is an empty module here, so the script exports neither it nor resumeToPipeableStream,
 * which the isolate, rendering to strings, never calls. What the legacy file does touch,
 * `console.error` (render errors) and `Intl` (the app's prices), V8 provides itself, so
 * the script carries no polyfills.
 */
async function buildV8() {
  const outDir = path.join(distDir, 'v8');
  const legacyServer = path.join(appDir, 'node_modules', 'react-dom', 'cjs', 'react-dom-server-legacy.browser.production.js');
  await rm(outDir, { recursive: true, force: true });
  await esbuild.build({
    entryPoints: [path.join(appDir, 'src', 'server.js')],
    outfile: path.join(outDir, 'server.js'),
    bundle: true,
    platform: 'browser',
    format: 'iife',
    globalName: 'SSR',
    target: 'es2022',
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    plugins: [
      {
        name: 'react-dom-server-legacy',
        setup(build) {
          build.onResolve({ filter: /^react-dom\/server$/ }, () => ({ path: legacyServer }));
          // CommonJS, so that the entry's named import of it is undefined, not a build error.
          build.onResolve({ filter: /^react-dom\/static$/ }, () => ({ path: 'react-dom/static', namespace: 'v8-empty' }));
          build.onLoad({ filter: /.*/, namespace: 'v8-empty' }, () => ({ contents: 'module.exports = {};', loader: 'js' }));
        },
      },
    ],
    absWorkingDir: appDir,
    logLevel: 'warning',
  });
  return path.join(outDir, 'server.js');
}

async function buildClient({ dev, outDir }) {
  await rm(outDir, { recursive: true, force: true });
  const { manifest, outputs, assets, manifestFile } = clientFiles(await esbuild.build(clientOptions({ ...source(path.join(appDir, 'src', 'client.jsx')), dev, outDir })), outDir, appDir);
  await emit([...assets, manifestFile]);
  return { manifest, outputs };
}

/**
 * Builds dist/server and dist/client now, then again after each change under src/, until
 * `notify` (a pid) is gone. Changes that come during a build make one more build.
 */
async function watch({ dev, notify, rel }) {
  const clientDir = path.join(distDir, 'client');
  const serverFile = path.join(distDir, 'server', 'server.js');
  const [server, client] = await Promise.all([
    esbuild.context({ ...serverOptions({ ...source(path.join(appDir, 'src', 'server-dev.js')), outfile: serverFile }), write: false }),
    esbuild.context(clientOptions({ ...source(path.join(appDir, 'src', 'client.jsx')), dev, outDir: clientDir })),
  ]);
  const alive = () => {
    try {
      process.kill(notify, 0);
      return true;
    } catch {
      return false;
    }
  };
  let running = null;
  let again = false;
  const build = async () => {
    do {
      again = false;
      let written;
      try {
        const [serverResult, clientResult] = await Promise.all([server.rebuild(), client.rebuild()]);
        const { manifest, assets, manifestFile } = clientFiles(clientResult, clientDir, appDir);
        written = await emit([...assets, ...withClientBuild(serverResult.outputFiles, serverFile, manifest.buildId), manifestFile]);
      } catch {
        console.error('app build failed (esbuild printed why above): dist/ is as it was, and the running version goes on serving');
        continue;
      }
      if (written.length === 0) continue;
      console.log(`app rebuilt: ${written.map(rel).join(', ')}`);
      // The edge reads a new manifest itself; the renderer is told of a new bundle.
      if (notify !== undefined && written.includes(serverFile) && alive()) process.kill(notify, 'SIGHUP');
    } while (again);
  };
  const rebuild = () => {
    if (running) {
      again = true;
      return;
    }
    running = build().finally(() => {
      running = null;
    });
  };
  await build();
  let pending;
  watchFiles(path.join(appDir, 'src'), { recursive: true }, () => {
    // An editor's save is several events: one build for them all.
    clearTimeout(pending);
    pending = setTimeout(rebuild, 50);
  });
  if (notify !== undefined) {
    setInterval(() => {
      if (!alive()) process.exit(0);
    }, 1000);
  }
  console.log(`watching ${rel(path.join(appDir, 'src'))}`);
}

async function buildFixture() {
  const outDir = path.join(fixtureDir, 'dist');
  await rm(outDir, { recursive: true, force: true });
  await esbuild.build(serverOptions({ ...source(path.join(fixtureDir, 'server.jsx')), outfile: path.join(outDir, 'server.js') }));
  return path.join(outDir, 'server.js');
}

async function main(args) {
  const { values: opts } = parseArgs({
    args,
    options: {
      dev: { type: 'boolean', default: false },
      fixture: { type: 'boolean', default: false },
      v8: { type: 'boolean', default: false },
      'client-outdir': { type: 'string' },
      watch: { type: 'boolean', default: false },
      notify: { type: 'string' },
    },
  });
  const rel = (file) => path.relative(repoDir, file);

  if (opts.watch) {
    if (opts.fixture || opts.v8 || opts['client-outdir'] !== undefined) {
      throw new Error('--watch builds dist/server and dist/client only');
    }
    const notify = opts.notify === undefined ? undefined : Number(opts.notify);
    if (notify !== undefined && !(Number.isInteger(notify) && notify > 0)) throw new Error(`--notify ${opts.notify}: not a pid`);
    await watch({ dev: opts.dev, notify, rel });
    return;
  }

  if (opts.fixture) {
    console.log(`fixture bundle: ${rel(await buildFixture())}`);
    return;
  }
  if (opts.v8) {
    console.log(`bare V8 server bundle: ${rel(await buildV8())}`);
    return;
  }
  const { dev } = opts;
  const clientOnly = opts['client-outdir'] !== undefined;
  const clientDir = clientOnly ? path.resolve(opts['client-outdir']) : path.join(distDir, 'client');
  if (clientOnly && [repoDir, appDir, distDir].includes(clientDir)) {
    throw new Error(`--client-outdir ${opts['client-outdir']}: refusing to empty ${clientDir}`);
  }
  if (!clientOnly) await mkdir(distDir, { recursive: true });
  // The client first: the server bundle names the client build it goes with.
  const client = await buildClient({ dev, outDir: clientDir });
  const server = clientOnly ? null : await buildServer(client.manifest.buildId);
  if (server) console.log(`server bundle: ${rel(server)}`);
  console.log(`client build (${dev ? 'development' : 'production'}): ${client.outputs.map((f) => rel(path.resolve(appDir, f))).join(', ')}`);
  console.log(`manifest: ${JSON.stringify(client.manifest)}`);
}

main(process.argv.slice(2)).catch((error) => {
  console.error(error.message ?? error);
  process.exitCode = 1;
});
