#!/usr/bin/env node
// Builds an app's server bundle and client build from its pages file
// (build/index.js; docs/app-contract.md).
import path from 'node:path';
import { parseArgs } from 'node:util';
import { build } from '../build/index.js';

const USAGE = `Usage: sidecar-ssr-build --pages FILE [--client FILE] [--outdir DIR] [--dev]

Builds what sidecar-ssr serves from a pages file (ESM, JSX allowed) that exports
\`pages\`, and optionally \`islands\`, \`notFoundPage\`, \`errorPage\` and \`warmup\`:
  DIR/server/server.js       the server bundle: sidecar-ssr-renderer --bundle DIR/server/server.js
  DIR/client/manifest.json   the client build the edge links (edge.assets_dir: DIR/client),
  DIR/client/assets/         and its hashed files

Options:
  --pages FILE    the pages file
  --client FILE   a client entry of your own; without it, one that hydrates the pages (and
                  islands) with sidecar-ssr-renderer/client
  --outdir DIR    default dist
  --dev           a development React client build (reports hydration mismatches), with source maps
  --help          this text

React and react-dom come from the node_modules the pages file sees: your app's.
Each file is replaced whole, the manifest last; older client assets stay.
`;

/** @param {string[]} argv */
async function main(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      pages: { type: 'string' },
      client: { type: 'string' },
      outdir: { type: 'string', default: 'dist' },
      dev: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  if (values.pages === undefined) throw new Error('--pages FILE is required (--help says more)');
  const { serverFile, clientDir, manifest, written } = await build({
    pages: values.pages, client: values.client, outdir: values.outdir, dev: values.dev,
  });
  /** @param {string} file */
  const rel = (file) => path.relative(process.cwd(), file);
  console.log(`server bundle: ${rel(serverFile)}`);
  console.log(`client build (${values.dev ? 'development' : 'production'}): ${rel(clientDir)}`);
  console.log(`manifest: ${JSON.stringify(manifest)}`);
  console.log(written.length === 0 ? 'nothing changed' : `written: ${written.map(rel).join(', ')}`);
}

main(process.argv.slice(2)).catch((/** @type {Error} */ error) => {
  // esbuild has printed its errors above; its own message repeats them.
  console.error(`sidecar-ssr-build: ${error.message.split('\n')[0]}`);
  process.exitCode = 1;
});
