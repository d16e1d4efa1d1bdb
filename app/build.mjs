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
//                             After a build that changed the server bundle, PID gets SIGHUP
//                             (scripts/run.sh, which passes it on to the renderer); the watch
//                             ends when PID does.
//
// Paths are resolved from this file, so it runs from any working directory.
import { createHash } from 'node:crypto';
import { watch as watchFiles } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as esbuild from 'esbuild';

const appDir = path.dirname(fileURLToPath(import.meta.url));
const repoDir = path.resolve(appDir, '..');
const distDir = path.join(appDir, 'dist');
const fixtureDir = path.join(repoDir, 'renderer', 'test', 'fixtures');

// react-dom/server's node build require()s node builtins; in an ESM bundle esbuild turns
// those into a __require that throws unless a real `require` is in scope.
const requireBanner =
  "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);";

/** Options shared by every server bundle: one self-contained ESM file for Node. */
function serverOptions(entry, outfile) {
  return {
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    banner: { js: requireBanner },
    absWorkingDir: appDir,
    logLevel: 'warning',
  };
}

/**
 * Resolves react and react-dom (and their subpaths) from app/node_modules, so a bundle
 * whose entry lives outside app/ still contains exactly one React: the app's.
 */
const appReact = {
  name: 'app-react',
  setup(build) {
    build.onResolve({ filter: /^react(-dom)?(\/.*)?$/ }, (args) => {
      if (args.pluginData === 'app-react') return undefined;
      return build.resolve(args.path, {
        kind: args.kind,
        resolveDir: appDir,
        pluginData: 'app-react',
      });
    });
  },
};

async function buildServer() {
  const outDir = path.join(distDir, 'server');
  await rm(outDir, { recursive: true, force: true });
  await esbuild.build(serverOptions(path.join(appDir, 'src', 'server.js'), path.join(outDir, 'server.js')));
  return path.join(outDir, 'server.js');
}

/**
 * The server entry as a classic script for a bare V8 isolate (no modules, no require, no
 * Node or web APIs): an IIFE that assigns src/server.js's exports to `globalThis.SSR`.
 *
 * react-dom/server is pointed at React's legacy browser renderer, the file that provides
 * renderToString and renderToStaticMarkup. Its node build require()s Node builtins, and its
 * browser entry (server.browser.js) also loads the streaming renderer, which calls
 * `new TextEncoder()` and `new MessageChannel()` when it is evaluated; the legacy file
 * needs neither. What it does touch, `console.error` (render errors) and `Intl` (the
 * app's prices), V8 provides itself, so the script carries no polyfills.
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
        },
      },
    ],
    absWorkingDir: appDir,
    logLevel: 'warning',
  });
  return path.join(outDir, 'server.js');
}

/** The client build, kept in memory: clientFiles() names what to write. */
function clientOptions({ dev, outDir }) {
  return {
    entryPoints: [path.join(appDir, 'src', 'client.jsx')],
    outdir: path.join(outDir, 'assets'),
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': dev ? '"development"' : '"production"' },
    minify: !dev,
    sourcemap: dev ? 'linked' : false,
    metafile: true,
    write: false,
    absWorkingDir: appDir,
    logLevel: 'warning',
  };
}

/**
 * The files of a client build: its hashed assets, and the manifest that names them (to be
 * written last, once the files it names are there).
 */
function clientFiles(result, outDir) {
  const outputs = Object.keys(result.metafile.outputs).sort();
  const contents = new Map(result.outputFiles.map((file) => [file.path, file.contents]));
  const url = (file) => '/assets/' + path.basename(file);
  const entry = outputs.find((file) => result.metafile.outputs[file].entryPoint && file.endsWith('.js'));
  const manifest = {
    buildId: '',
    scripts: [url(entry)],
    styles: outputs.filter((file) => file.endsWith('.css')).map(url),
  };

  // buildId: a short hash over every output's name and contents (metafile paths are
  // relative to absWorkingDir).
  const hash = createHash('sha256');
  for (const file of outputs) {
    hash.update(path.basename(file)).update('\0');
    hash.update(contents.get(path.resolve(appDir, file))).update('\0');
  }
  manifest.buildId = hash.digest('hex').slice(0, 8);

  const manifestFile = { path: path.join(outDir, 'manifest.json'), contents: JSON.stringify(manifest, null, 2) + '\n' };
  return { manifest, outputs, assets: result.outputFiles, manifestFile };
}

async function buildClient({ dev, outDir }) {
  await rm(outDir, { recursive: true, force: true });
  const { manifest, outputs, assets, manifestFile } = clientFiles(await esbuild.build(clientOptions({ dev, outDir })), outDir);
  await emit([...assets, manifestFile]);
  return { manifest, outputs };
}

/**
 * Writes each file whose contents changed, in order, each beside its place then renamed
 * onto it: a renderer worker or an edge reading it meanwhile sees the old file or the new
 * one, never half of one. Returns the paths written.
 */
async function emit(files) {
  const written = [];
  for (const file of files) {
    const contents = typeof file.contents === 'string' ? Buffer.from(file.contents) : file.contents;
    const before = await readFile(file.path).catch(() => null);
    if (before?.equals(contents)) continue;
    await mkdir(path.dirname(file.path), { recursive: true });
    await writeFile(`${file.path}.tmp`, contents);
    await rename(`${file.path}.tmp`, file.path);
    written.push(file.path);
  }
  return written;
}

/**
 * Builds dist/server and dist/client now, then again after each change under src/, until
 * `notify` (a pid) is gone. Changes that come during a build make one more build.
 */
async function watch({ dev, notify, rel }) {
  const clientDir = path.join(distDir, 'client');
  const serverFile = path.join(distDir, 'server', 'server.js');
  const [server, client] = await Promise.all([
    esbuild.context({ ...serverOptions(path.join(appDir, 'src', 'server.js'), serverFile), write: false }),
    esbuild.context(clientOptions({ dev, outDir: clientDir })),
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
        const { assets, manifestFile } = clientFiles(clientResult, clientDir);
        written = await emit([...assets, ...serverResult.outputFiles, manifestFile]);
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
  await esbuild.build({
    ...serverOptions(path.join(fixtureDir, 'server.jsx'), path.join(outDir, 'server.js')),
    nodePaths: [path.join(appDir, 'node_modules')],
    plugins: [appReact],
  });
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
  const [server, client] = await Promise.all([
    clientOnly ? null : buildServer(),
    buildClient({ dev, outDir: clientDir }),
  ]);
  if (server) console.log(`server bundle: ${rel(server)}`);
  console.log(`client build (${dev ? 'development' : 'production'}): ${client.outputs.map((f) => rel(path.resolve(appDir, f))).join(', ')}`);
  console.log(`manifest: ${JSON.stringify(client.manifest)}`);
}

main(process.argv.slice(2)).catch((error) => {
  console.error(error.message ?? error);
  process.exitCode = 1;
});
