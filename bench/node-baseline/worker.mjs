// Renders one request: the page's load(), renderToString, and the same document shape the
// edge writes (head tags, root, hydration props escaped for a script element).
import { pathToFileURL } from 'node:url';
import { workerData } from 'node:worker_threads';

const app = await import(pathToFileURL(workerData.bundle).href);
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
    html: `<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n${head}\n</head>\n<body>\n<div id="root">${body}</div>\n<script id="__SSR_DATA__" type="application/json">${data}</script>\n</body>\n</html>\n`,
  };
}
