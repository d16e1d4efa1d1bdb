// Renders one request with the renderer's own code (load(), the page, its head), and writes
// the edge's document around it, byte for byte (edge/internal/document; held equal by
// edge/e2e TestBareNodeServesTheEdgesBytes), so the bench compares the same bytes: head tags,
// the client build's styles and scripts, the root, the hydration props escaped for a script
// element. `loadApp` loads the bundle once and gives two renders: `render`, a page whole
// (renderToString), and `stream`, the page that streams (renderToPipeableStream), handing its
// bytes on as React flushes them. The same code renders in a Piscina worker (worker.mjs) and,
// with server.mjs --main-thread, on the server's own thread, so that the two contenders differ
// only in where the render runs.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { preparePage, renderHead, renderPage } from '../../renderer/src/worker/render-page.js';
import { byteLengthOf, writeChunks } from '../../renderer/src/worker/stream.js';

const unsafe = /[<>&\u2028\u2029]/g;
const escape = (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * What a streamed render hands on, in order: the bytes of each of React's flushes, the first
 * with the response's status, the last with `end`. The bytes are a buffer of their own, which
 * a worker can move to the main thread.
 * @typedef {{bytes: Uint8Array, status?: number, end: boolean}} StreamMessage
 */

/**
 * Loads the app's server bundle and the client build's manifest.
 * @param {{bundle: string, manifest: string}} files absolute paths
 */
export async function loadApp({ bundle, manifest: manifestFile }) {
  const app = await import(pathToFileURL(bundle).href);
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
  const assets = [
    ...manifest.styles.map((href) => `<link rel="stylesheet" href="${href}">\n`),
    ...manifest.scripts.map((src) => `<script type="module" src="${src}"></script>\n`),
  ].join('');
  return { render: (task) => render(app, assets, task), stream: (task, post) => stream(app, assets, task, post) };
}

/**
 * @param {any} app the server bundle
 * @param {string} assets the client build's tags
 * @param {{url: string, props?: Record<string, unknown>}} task props: from the database (--db)
 */
async function render(app, assets, task) {
  const { url } = task;
  const path = new URL(url, 'http://x').pathname;
  const match = /^\/products\/([^/]+)$/.exec(path);
  const name = path === '/' ? 'home' : match ? 'product' : app.notFoundPage;
  const params = match ? { id: match[1] } : {};
  const page = await renderPage(app, { page: name, url, params, variants: {}, props: task.props });
  // The renderer sends back only props its load() made; the caller embeds its own, as the
  // edge does.
  const [open, close] = documentAround(assets, page.page, page.head, url, params, page.propsJson || JSON.stringify(task.props ?? {}));
  return { status: name === app.notFoundPage ? 404 : page.status, html: open + page.html + close };
}

/**
 * The demo's page that streams (product-reviews, /products/{id}/reviews): the document's
 * opening and the shell go out at the shell, each Suspense boundary as it resolves. Resolves
 * once React has written the last boundary: in a worker, the task holds its worker until then,
 * as the renderer's does.
 * @param {any} app the server bundle
 * @param {string} assets the client build's tags
 * @param {{url: string, params: Record<string, string>}} task
 * @param {(message: StreamMessage) => void} post
 */
async function stream(app, assets, { url, params }, post) {
  const prepared = await preparePage(app, { page: 'product-reviews', url, params, variants: {} });
  const { entry, props, ctx } = prepared;
  const [open, close] = documentAround(assets, prepared.page, renderHead(app, entry, props, ctx), url, params, prepared.propsJson || '{}');
  await new Promise((resolve, reject) => {
    const destination = new Destination(post, prepared.status, open, close, resolve);
    const react = app.renderToPipeableStream(app.createElement(entry.component, props), {
      onShellReady: () => react.pipe(destination),
      onShellError: reject,
    });
  });
}

/**
 * The edge's document around a page's body: what goes before it and what goes after it.
 * @param {string} assets the client build's tags
 * @param {string} page the page rendered
 * @param {string} head its head() markup
 * @param {string} url
 * @param {Record<string, string>} params
 * @param {string} props the hydration props, JSON
 * @returns {[string, string]}
 */
function documentAround(assets, page, head, url, params, props) {
  const envelope = JSON.stringify({ page, url, params });
  const data = `${envelope.slice(0, -1)},"props":${props}}`.replace(unsafe, escape);
  return [
    '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
      + '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
      + `${head === '' ? '' : `${head}\n`}${assets}</head>\n<body>\n<div id="root">`,
    `</div>\n<script id="__SSR_DATA__" type="application/json">${data}</script>\n</body>\n</html>\n`,
  ];
}

/**
 * The Writable React's pipe() needs: write, end, on, and flush, which React calls after each
 * batch of writes (the shell, a boundary). React writes many small views and long strings;
 * each batch is joined here into one buffer (which a worker moves to the main thread, not
 * cloned), so that one chunk per batch goes to the socket.
 */
class Destination {
  /** @type {Array<string | Uint8Array>} */
  #pending;
  #post;
  /** @type {number | undefined} sent with the first batch, then undefined */
  #status;
  #close;
  #ended;

  /**
   * @param {(message: StreamMessage) => void} post
   * @param {number} status
   * @param {string} open the document before the body: it goes out with the shell
   * @param {string} close the document after the body
   * @param {() => void} ended
   */
  constructor(post, status, open, close, ended) {
    this.#post = post;
    this.#status = status;
    this.#pending = [open];
    this.#close = close;
    this.#ended = ended;
  }

  /** @param {string | Uint8Array} chunk */
  write(chunk) {
    this.#pending.push(chunk);
    return true;
  }

  flush() {
    if (this.#pending.length > 0) this.#flush(false);
  }

  end() {
    this.#pending.push(this.#close);
    this.#flush(true);
    this.#ended();
  }

  // React listens for drain, error and close: this destination never emits them.
  on() {
    return this;
  }

  /** @param {boolean} end */
  #flush(end) {
    // Not from Buffer's shared pool: a buffer of its own can be moved.
    const bytes = Buffer.allocUnsafeSlow(byteLengthOf(this.#pending));
    writeChunks(bytes, 0, this.#pending);
    this.#pending = [];
    /** @type {StreamMessage} */
    const message = { bytes, status: this.#status, end };
    this.#status = undefined;
    this.#post(message);
  }
}
