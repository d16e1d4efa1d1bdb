import path from 'node:path';

// The pages are the demo's own components, in the repository's app/src: Turbopack (and the
// output file tracing) must see the whole repository, not just this directory. Relative,
// so that a clone anywhere builds.
const repo = path.join(import.meta.dirname, '../../..');

/** @type {import('next').NextConfig} */
export default {
  turbopack: { root: repo },
  outputFileTracingRoot: repo,
  // The default, written down: Next gzips its responses itself (docs: "compress").
  compress: true,
};
