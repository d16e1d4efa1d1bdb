// Builds an app for the renderer and the edge (docs/app-contract.md) with
// esbuild: the server bundle the renderer imports, and the client build with
// the manifest the edge links. `build` does it all from a pages file
// (sidecar-ssr-build); the option builders are for a build script of one's
// own (app/build.mjs is one). Runs on Node 20 too: no renderer code here.
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

/** @import { BuildOptions, BuildResult, OutputFile, Plugin } from 'esbuild' */

/**
 * react-dom/server's node build require()s node builtins; in an ESM bundle
 * esbuild turns those into a __require that throws ("Dynamic require of
 * "util" is not supported") unless a real `require` is in scope.
 */
const requireBanner =
  "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);";

/** The browser half of the contract, which a generated client entry starts. */
const CLIENT_HELPER = fileURLToPath(new URL('../client/index.js', import.meta.url));

/**
 * @typedef {object} Source what a build starts from
 * @property {BuildOptions['entryPoints']} entryPoints
 * @property {Plugin[]} [plugins]
 * @property {string} absWorkingDir the app's directory: esbuild's paths are relative to it
 * @property {string} reactDir where react and react-dom are resolved from: the app's own,
 *   so one React renders and hydrates, whichever folder imports it (this package's client
 *   helper, a test fixture outside the app)
 */

/**
 * Resolves react and react-dom (and their subpaths) from `dir`.
 * @param {string} dir
 * @returns {Plugin}
 */
function reactFrom(dir) {
  return {
    name: 'sidecar-ssr-react',
    setup(build) {
      build.onResolve({ filter: /^react(-dom)?(\/.*)?$/ }, (args) => {
        if (args.pluginData === 'sidecar-ssr-react') return undefined;
        return build.resolve(args.path, { kind: args.kind, resolveDir: dir, pluginData: 'sidecar-ssr-react' });
      });
    },
  };
}

/**
 * Options for a server bundle: one self-contained ESM file for Node, React bundled in.
 * @param {Source & {outfile: string}} source
 * @returns {BuildOptions}
 */
export function serverOptions({ entryPoints, plugins = [], absWorkingDir, reactDir, outfile }) {
  return {
    entryPoints,
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    banner: { js: requireBanner },
    plugins: [...plugins, reactFrom(reactDir)],
    absWorkingDir,
    logLevel: 'warning',
  };
}

/**
 * Options for a client build, kept in memory: clientFiles() names what to write.
 * @param {Source & {outDir: string, dev: boolean}} source `dev`: development React,
 *   which reports hydration mismatches, unminified, with source maps
 * @returns {BuildOptions & {metafile: true, write: false}}
 */
export function clientOptions({ entryPoints, plugins = [], absWorkingDir, reactDir, outDir, dev }) {
  return {
    entryPoints,
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
    plugins: [...plugins, reactFrom(reactDir)],
    absWorkingDir,
    logLevel: 'warning',
  };
}

/**
 * @typedef {object} Manifest what the edge links (docs/app-contract.md, "Client build")
 * @property {string} buildId
 * @property {string[]} scripts
 * @property {string[]} styles
 */

/**
 * @typedef {object} FileToWrite
 * @property {string} path
 * @property {string | Uint8Array} contents
 */

/**
 * The server bundle's files with the client build they go with named in the bundle, as its
 * export `clientBuildId`: the renderer sends it with every page, and the edge links that
 * build, so that no page mixes a client build with another bundle's HTML.
 * @param {OutputFile[]} outputs the server build's (write: false)
 * @param {string} serverFile the bundle's path among them
 * @param {string} buildId the client build's (its manifest's)
 * @returns {Array<OutputFile | FileToWrite>}
 */
export function withClientBuild(outputs, serverFile, buildId) {
  const footer = new TextEncoder().encode(`\nexport const clientBuildId = ${JSON.stringify(buildId)};\n`);
  return outputs.map((file) => {
    if (path.resolve(file.path) !== path.resolve(serverFile)) return file;
    const contents = new Uint8Array(file.contents.length + footer.length);
    contents.set(file.contents);
    contents.set(footer, file.contents.length);
    return { path: file.path, contents };
  });
}

/**
 * The files of a client build: its hashed assets, and the manifest that names them (to be
 * written last, once the files it names are there).
 * @param {BuildResult<{metafile: true, write: false}>} result of a build with clientOptions
 * @param {string} outDir as given to clientOptions
 * @param {string} absWorkingDir as given to clientOptions
 * @returns {{manifest: Manifest, outputs: string[], assets: OutputFile[], manifestFile: FileToWrite}}
 *   `outputs`: the files' paths relative to absWorkingDir
 */
export function clientFiles(result, outDir, absWorkingDir) {
  const outputs = Object.keys(result.metafile.outputs).sort();
  const contents = new Map(result.outputFiles.map((file) => [file.path, file.contents]));
  /** @param {string} file */
  const url = (file) => '/assets/' + path.basename(file);
  const entry = outputs.find((file) => result.metafile.outputs[file].entryPoint && file.endsWith('.js'));
  if (entry === undefined) throw new Error('the client build has no JavaScript entry');

  // buildId: a short hash over every output's name and contents.
  const hash = createHash('sha256');
  for (const file of outputs) {
    hash.update(path.basename(file)).update('\0');
    hash.update(/** @type {Uint8Array} */ (contents.get(path.resolve(absWorkingDir, file)))).update('\0');
  }
  /** @type {Manifest} */
  const manifest = {
    buildId: hash.digest('hex').slice(0, 8),
    scripts: [url(entry)],
    styles: outputs.filter((file) => file.endsWith('.css')).map(url),
  };
  const manifestFile = { path: path.join(outDir, 'manifest.json'), contents: JSON.stringify(manifest, null, 2) + '\n' };
  return { manifest, outputs, assets: result.outputFiles, manifestFile };
}

/**
 * Writes each file whose contents changed, in order, each beside its place then renamed
 * onto it: a renderer worker or an edge reading it meanwhile sees the old file or the new
 * one, never half of one. Returns the paths written.
 * @param {FileToWrite[]} files
 * @returns {Promise<string[]>}
 */
export async function emit(files) {
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
 * An entry made of `contents`, named `name` in the output (esbuild's stdin is always
 * "stdin"); its imports resolve from `resolveDir`.
 * @param {string} name
 * @param {string[]} lines
 * @param {string} resolveDir
 * @returns {{entryPoints: Array<{in: string, out: string}>, plugins: Plugin[]}}
 */
function generatedEntry(name, lines, resolveDir) {
  const namespace = 'sidecar-ssr-entry';
  return {
    entryPoints: [{ in: `${namespace}:${name}`, out: name }],
    plugins: [{
      name: namespace,
      setup(build) {
        build.onResolve({ filter: new RegExp(`^${namespace}:`) }, (args) => ({ path: args.path, namespace }));
        build.onLoad({ filter: /.*/, namespace }, () => ({ contents: lines.join('\n') + '\n', resolveDir, loader: 'js' }));
      },
    }],
  };
}

/**
 * @typedef {object} BuildOptionsOfApp
 * @property {string} pages the pages file (ESM, JSX allowed): exports `pages`, and
 *   optionally `islands`, `notFoundPage`, `errorPage` (client only) and `warmup`
 * @property {string} [client] a client entry of one's own; without it, one that calls this
 *   package's client helper with the pages file's exports
 * @property {string} [outdir] default `dist`
 * @property {boolean} [dev] a development client build
 * @property {string} [cwd] what relative paths are relative to; the process's by default
 */

/**
 * Builds `<outdir>/server/server.js` (the server bundle) and `<outdir>/client/` (hashed
 * assets, then manifest.json). Nothing is emptied first: each file is replaced whole, and
 * older client assets stay for pages already in browsers. React comes from the
 * node_modules the pages file sees.
 * @param {BuildOptionsOfApp} options
 * @returns {Promise<{serverFile: string, clientDir: string, manifest: Manifest, written: string[]}>}
 */
export async function build({ pages, client, outdir = 'dist', dev = false, cwd: dir = process.cwd() }) {
  const cwd = path.resolve(dir);
  const pagesFile = path.resolve(cwd, pages);
  const outDir = path.resolve(cwd, outdir);
  const reactDir = path.dirname(pagesFile);
  const serverFile = path.join(outDir, 'server', 'server.js');
  const clientDir = path.join(outDir, 'client');
  const server = generatedEntry('server', [
    "export { createElement } from 'react';",
    // renderToPipeableStream for the pages that stream, prerenderToNodeStream and
    // resumeToPipeableStream for those partially prerendered: here, never in the pages file,
    // which the client bundle imports too.
    "export { renderToString, renderToStaticMarkup, renderToPipeableStream, resumeToPipeableStream } from 'react-dom/server';",
    "export { prerenderToNodeStream } from 'react-dom/static';",
    `export * from ${JSON.stringify(pagesFile)};`,
  ], reactDir);
  const clientEntry = client === undefined
    ? generatedEntry('client', [
      `import { start } from ${JSON.stringify(CLIENT_HELPER)};`,
      `import * as app from ${JSON.stringify(pagesFile)};`,
      'start(app);',
    ], reactDir)
    : { entryPoints: [path.resolve(cwd, client)] };
  const [serverResult, clientResult] = await Promise.all([
    esbuild.build({ ...serverOptions({ ...server, absWorkingDir: cwd, reactDir, outfile: serverFile }), write: false }),
    esbuild.build(clientOptions({ ...clientEntry, absWorkingDir: cwd, reactDir, outDir: clientDir, dev })),
  ]);
  const { manifest, assets, manifestFile } = clientFiles(clientResult, clientDir, cwd);
  const written = await emit([
    ...withClientBuild(serverResult.outputFiles, serverFile, manifest.buildId),
    // The bundle is ESM: in an app whose package.json says "type": "commonjs" (npm init's
    // default), Node would load a .js file as CommonJS and fail on its first import.
    { path: path.join(outDir, 'server', 'package.json'), contents: '{ "type": "module" }\n' },
    ...assets,
    manifestFile,
  ]);
  return { serverFile, clientDir, manifest, written };
}
