// Renders one request: the page's load(), renderToString, and the edge's document, byte for
// byte (edge/internal/document; held equal by edge/e2e TestBareNodeServesTheEdgesBytes), so
// the bench compares the same bytes: head tags, the client build's styles and scripts, the
// root, the hydration props escaped for a script element.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { workerData } from 'node:worker_threads';

const app = await import(pathToFileURL(workerData.bundle).href);
const manifest = JSON.parse(readFileSync(workerData.manifest, 'utf8'));
const assets = [
  ...manifest.styles.map((href) => `<link rel="stylesheet" href="${href}">\n`),
  ...manifest.scripts.map((src) => `<script type="module" src="${src}"></script>\n`),
].join('');
const unsafe = /[<>&\u2028\u2029]/g;
const escape = (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** @param {{url: string, props?: Record<string, unknown>}} task props: from the database (--db) */
export default async function render({ url, props: given }) {
  const u = new URL(url, 'http://x');
  const match = /^\/products\/([^/]+)$/.exec(u.pathname);
  const name = u.pathname === '/' ? 'home' : match ? 'product' : app.notFoundPage;
  const params = match ? { id: match[1] } : {};
  let page = app.pages[name];
  const ctx = { url, params, query: Object.fromEntries(u.searchParams), variants: {}, props: given ?? {} };
  let result = page.load ? await page.load(ctx) : { props: {} };
  let status = name === app.notFoundPage ? 404 : 200;
  if (result.notFound) {
    page = app.pages[app.notFoundPage];
    result = { props: {} };
    status = 404;
  }
  const props = result.props ?? {};
  const head = page.head ? app.renderToStaticMarkup(page.head(props, ctx)) : '';
  const body = app.renderToString(app.createElement(page.component, props));
  const data = JSON.stringify({ page: name, url, params, props }).replace(unsafe, escape);
  return {
    status,
    html: '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
      + '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
      + `${head === '' ? '' : `${head}\n`}${assets}</head>\n<body>\n<div id="root">${body}</div>\n`
      + `<script id="__SSR_DATA__" type="application/json">${data}</script>\n</body>\n</html>\n`,
  };
}
