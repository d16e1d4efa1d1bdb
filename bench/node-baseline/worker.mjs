// Renders one request with the renderer's own renderPage (load(), the page, its head), and
// writes the edge's document around it, byte for byte (edge/internal/document; held equal by
// edge/e2e TestBareNodeServesTheEdgesBytes), so the bench compares the same bytes: head tags,
// the client build's styles and scripts, the root, the hydration props escaped for a script
// element.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { workerData } from 'node:worker_threads';
import { renderPage } from '../../renderer/src/worker/render-page.js';

const app = await import(pathToFileURL(workerData.bundle).href);
const manifest = JSON.parse(readFileSync(workerData.manifest, 'utf8'));
const assets = [
  ...manifest.styles.map((href) => `<link rel="stylesheet" href="${href}">\n`),
  ...manifest.scripts.map((src) => `<script type="module" src="${src}"></script>\n`),
].join('');
const unsafe = /[<>&\u2028\u2029]/g;
const escape = (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** @param {{url: string, props?: Record<string, unknown>}} task props: from the database (--db) */
export default async function render(task) {
  const { url } = task;
  const path = new URL(url, 'http://x').pathname;
  const match = /^\/products\/([^/]+)$/.exec(path);
  const name = path === '/' ? 'home' : match ? 'product' : app.notFoundPage;
  const params = match ? { id: match[1] } : {};
  const page = await renderPage(app, { page: name, url, params, variants: {}, props: task.props });
  const envelope = JSON.stringify({ page: page.page, url, params });
  // The renderer sends back only props its load() made; the caller embeds its own, as the
  // edge does.
  const props = page.propsJson || JSON.stringify(task.props ?? {});
  const data = `${envelope.slice(0, -1)},"props":${props}}`.replace(unsafe, escape);
  return {
    status: name === app.notFoundPage ? 404 : page.status,
    html: '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
      + '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
      + `${page.head === '' ? '' : `${page.head}\n`}${assets}</head>\n<body>\n<div id="root">${page.html}</div>\n`
      + `<script id="__SSR_DATA__" type="application/json">${data}</script>\n</body>\n</html>\n`,
  };
}
