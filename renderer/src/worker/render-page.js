// One render, following docs/app-contract.md: find the page, run its load(),
// honour notFound/redirect/status/headers/cache, render body and head; or an
// island of a Go template, its component alone; or a page to resume from a
// prerender, found with its props and no load(). Runs inside a worker; knows
// nothing of gRPC or Piscina.
import { performance } from 'node:perf_hooks';
import { decide } from '../decision.js';
import { InvalidPropsError, PageNotFoundError, PageThrewError } from '../errors.js';
import { DeferredValues, componentProps } from './deferred-values.js';
import { RenderAborted } from './renders.js';

/** @import { RenderTask } from '../threads/messages.js' */
/** @import { HeldRender } from './renders.js' */
/** @import { LoadContext, LoadResult, Page as PageEntry } from '../app-contract.js' */

/**
 * What the server bundle exports (docs/app-contract.md).
 * @typedef {object} Bundle
 * @property {Record<string, PageEntry>} pages
 * @property {Record<string, any>} [islands] components by name, each rendered with its props
 *   alone (RenderIslands)
 * @property {string} [notFoundPage]
 * @property {unknown} [lang] every document's lang ("de"): checked where it is read (worker.js)
 * @property {unknown} [documentHead] a component of every document's head tags: checked where
 *   it is read (worker.js)
 * @property {string} [clientBuildId] the client build it was built with (sidecar-ssr-build
 *   exports it): the edge links that build with the page
 * @property {(type: any, props?: any) => unknown} createElement
 * @property {(element: any) => string} renderToString
 * @property {(element: any) => string} renderToStaticMarkup
 * @property {(element: any, options: PipeableOptions) => PipeableStream}
 *   [renderToPipeableStream] react-dom/server's: needed only by pages that stream
 * @property {(element: any, options: PrerenderOptions) => Promise<{prelude: AsyncIterable<string | Uint8Array>, postponed: unknown}>}
 *   [prerenderToNodeStream] react-dom/static's: needed only by partially prerendered pages
 *   (prerender.js), with resumeToPipeableStream
 * @property {(element: any, postponed: unknown, options: PipeableOptions) => PipeableStream}
 *   [resumeToPipeableStream] react-dom/server's: renders a prerender's holes (stream.js)
 */

/**
 * The options of renderToPipeableStream and resumeToPipeableStream that stream.js uses.
 * @typedef {object} PipeableOptions
 * @property {() => void} onShellReady
 * @property {(error: unknown) => void} onShellError
 * @property {(error: unknown) => string | void} onError
 * @property {string} [nonce] set on React's inline scripts
 */

/** @typedef {{pipe: (destination: any) => unknown, abort: (reason?: unknown) => void}} PipeableStream */

/**
 * The options of prerenderToNodeStream that prerender.js uses.
 * @typedef {object} PrerenderOptions
 * @property {AbortSignal} signal its abort stops the prerender: what is still pending is a hole
 * @property {(error: unknown) => string | void} onError
 */

/**
 * @typedef {object} PageResult
 * @property {string} page the page rendered (the not-found page after notFound)
 * @property {string} html
 * @property {string} head
 * @property {number} status
 * @property {Array<{name: string, value: string}>} headers
 * @property {{maxAgeSeconds: number, noStore: boolean, tags: string[]}} cache
 * @property {string} propsJson the props the page rendered with, when its load() made them;
 *   empty when it rendered with the caller's as they came (the caller has those: props
 *   cross the hop once), and for a redirect
 * @property {number} loadStart performance.now() when load() began
 * @property {number} loadUs
 * @property {number} [renderStart] performance.now() when the render began
 *   (none for a redirect)
 * @property {number} renderUs
 */

/**
 * A page whose load() ran and whose decision is known, ready to render
 * (renderPage, or stream.js for a page that streams).
 * @typedef {object} PreparedPage
 * @property {string} page the page to render (the not-found page after notFound)
 * @property {PageEntry} entry
 * @property {Record<string, unknown>} props
 * @property {Record<string, unknown>} elementProps the component's: props, and the
 *   deferred values' promises when the caller sent any
 * @property {DeferredValues} [deferred]
 * @property {LoadContext} ctx
 * @property {number} status
 * @property {Array<{name: string, value: string}>} headers
 * @property {PageResult['cache']} cache
 * @property {string} [redirect] set for a redirect, which renders nothing
 * @property {unknown} [postponed] set for a page resumed from a prerender (resumedPage): the
 *   prerender's postponed state
 * @property {string} propsJson as PageResult's
 * @property {number} loadStart
 * @property {number} loadUs
 */

/**
 * @param {Bundle} bundle
 * @param {RenderTask} task
 * @param {HeldRender} [held] the worker's hold on it: an abort rejects the awaited load() at once
 * @returns {Promise<PageResult>}
 */
export async function renderPage(bundle, task, held) {
  if (task.island !== undefined) return renderIsland(bundle, task.island, task.propsJson);
  const prepared = await preparePage(bundle, task, held);
  const pending = prepared.deferred?.pending ?? [];
  if (pending.length > 0) {
    throw new InvalidPropsError(`deferred value "${pending[0]}" is pending: a page that does not stream renders once every value has settled`);
  }
  const { page, status, headers, cache, propsJson, loadStart, loadUs } = prepared;
  if (prepared.redirect !== undefined) {
    return { page, html: '', head: '', status, headers, cache, propsJson, loadStart, loadUs, renderUs: 0 };
  }
  const renderStart = performance.now();
  const rendered = render(bundle, prepared.entry, prepared, prepared.ctx);
  const renderUs = micros(performance.now() - renderStart);
  return { page, ...rendered, status, headers, cache, propsJson, loadStart, loadUs, renderStart, renderUs };
}

/**
 * An island: encoded as a page is, its response names no page, and carries no head,
 * headers, cache hints or props (render.proto's IslandResult).
 * @param {Bundle} bundle
 * @param {string} island
 * @param {Uint8Array | undefined} propsJson
 * @returns {PageResult}
 */
function renderIsland(bundle, island, propsJson) {
  const islands = bundle.islands ?? {};
  if (!Object.hasOwn(islands, island)) throw new PageNotFoundError(`unknown island "${island}"`);
  const props = parseCallerProps(propsJson);
  const renderStart = performance.now();
  let html;
  try {
    html = bundle.renderToString(bundle.createElement(islands[island], props));
  } catch (err) {
    throw pageThrew(err);
  }
  const renderUs = micros(performance.now() - renderStart);
  const cache = { maxAgeSeconds: 0, noStore: false, tags: [] };
  return { page: '', html, head: '', status: 200, headers: [], cache, propsJson: '', loadStart: renderStart, loadUs: 0, renderStart, renderUs };
}

/**
 * Finds the page, runs its load() and decides: everything before the render.
 * @param {Bundle} bundle
 * @param {RenderTask} task
 * @param {HeldRender} [held] as renderPage's
 * @returns {Promise<PreparedPage>}
 */
export async function preparePage(bundle, task, held) {
  let page = task.page;
  let entry = lookup(bundle, page);
  if (!entry) throw new PageNotFoundError(`unknown page "${page}"`);

  // Frozen, so that a load() that changes them must return new ones: the caller's own are
  // not sent back (propsJson), and a change in place would hydrate with the old ones.
  const callerProps = Object.freeze(task.props ?? parseCallerProps(task.propsJson));
  const ctx = contextOf(task, callerProps);

  const loadStart = performance.now();
  let result = await runLoad(entry, ctx, held);
  const decision = decided(result);
  if ('notFound' in decision) {
    page = bundle.notFoundPage ?? '';
    entry = lookup(bundle, page);
    if (!entry) throw new PageThrewError(`load() returned notFound but the bundle has no notFoundPage "${page}"`);
    // The not-found page's own load() gives its props and headers; its status stays 404.
    result = await runLoad(entry, ctx, held);
  }
  const loadUs = micros(performance.now() - loadStart);

  const headers = toHeaders(result.headers);
  const cache = { maxAgeSeconds: result.cache?.maxAgeSeconds ?? 0, noStore: result.cache?.noStore ?? false, tags: cacheTags(result.cache?.tags) };

  if ('redirect' in decision) {
    headers.push({ name: 'Location', value: decision.redirect });
    return {
      page, entry, props: callerProps, elementProps: callerProps, ctx, status: decision.status, headers, cache,
      redirect: decision.redirect, propsJson: '', loadStart, loadUs,
    };
  }
  const props = result.props ?? callerProps;
  const propsJson = props === callerProps ? '' : stringifyProps(props);
  // The not-found page answers instead of the one the values were for.
  const deferred = task.deferred?.length && !('notFound' in decision) ? new DeferredValues(task.deferred) : undefined;
  return {
    page, entry, props, elementProps: componentProps(props, deferred), deferred, ctx, status: decision.status || 200,
    headers, cache, propsJson, loadStart, loadUs,
  };
}

/**
 * A page to resume from a prerender (RenderStreamRequest.resume): found, its props the
 * caller's, which are those its prelude was rendered with, and its deferred values the
 * request's. load() does not run and nothing is decided: the prelude's head said it all.
 * @param {Bundle} bundle
 * @param {RenderTask} task
 * @param {Uint8Array} resume the prerender's postponed state, JSON
 * @returns {PreparedPage}
 */
export function resumedPage(bundle, task, resume) {
  const { page } = task;
  const entry = lookup(bundle, page);
  if (!entry) throw new PageNotFoundError(`unknown page "${page}"`);
  let postponed;
  try {
    postponed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(resume));
  } catch (err) {
    throw new InvalidPropsError(`resume is not valid JSON: ${/** @type {Error} */ (err).message}`);
  }
  if (typeof postponed !== 'object' || postponed === null) throw new InvalidPropsError('resume is not a prerender\'s postponed state');
  const props = Object.freeze(task.props ?? parseCallerProps(task.propsJson));
  const deferred = task.deferred?.length ? new DeferredValues(task.deferred) : undefined;
  const loadStart = performance.now();
  return {
    page, entry, props, elementProps: componentProps(props, deferred), deferred, ctx: contextOf(task, props), status: 200,
    headers: [], cache: { maxAgeSeconds: 0, noStore: false, tags: [] }, postponed, propsJson: '', loadStart, loadUs: 0,
  };
}

/**
 * What load() and head() are given.
 * @param {RenderTask} task
 * @param {Record<string, unknown>} props the caller's
 * @returns {LoadContext}
 */
function contextOf(task, props) {
  const url = task.url || '/';
  return { url, params: task.params, query: firstValues(url), variants: task.variants, props };
}

/**
 * @param {Bundle} bundle
 * @param {string} page
 */
function lookup(bundle, page) {
  return Object.hasOwn(bundle.pages, page) ? bundle.pages[page] : undefined;
}

/**
 * @param {Uint8Array | undefined} bytes
 * @returns {Record<string, unknown>}
 */
function parseCallerProps(bytes) {
  if (!bytes || bytes.byteLength === 0) return {};
  let value;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (err) {
    throw new InvalidPropsError(`props_json is not valid JSON: ${/** @type {Error} */ (err).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidPropsError('props_json must be a JSON object');
  }
  return value;
}

/**
 * The first value of each query parameter, as the contract's `query`.
 * @param {string} url
 */
function firstValues(url) {
  /** @type {Record<string, string>} */
  const query = {};
  // The base only makes a path parse; the page never sees it.
  for (const [key, value] of new URL(url, 'http://renderer.invalid').searchParams) {
    if (!Object.hasOwn(query, key)) query[key] = value;
  }
  return query;
}

/**
 * @param {PageEntry} entry
 * @param {LoadContext} ctx
 * @param {HeldRender} [held]
 * @returns {Promise<LoadResult>}
 */
async function runLoad(entry, ctx, held) {
  if (!entry.load) return {};
  try {
    const loading = entry.load(ctx);
    return (await (held ? held.wait(loading) : loading)) ?? {};
  } catch (err) {
    if (err instanceof RenderAborted) throw err;
    throw pageThrew(err);
  }
}

/**
 * @param {Bundle} bundle
 * @param {PageEntry} entry
 * @param {{props: Record<string, unknown>, elementProps: Record<string, unknown>}} with
 * @param {LoadContext} ctx
 */
function render(bundle, entry, { props, elementProps }, ctx) {
  try {
    const html = bundle.renderToString(bundle.createElement(entry.component, elementProps));
    return { html, head: renderHead(bundle, entry, props, ctx) };
  } catch (err) {
    throw pageThrew(err);
  }
}

/**
 * The page's head() as markup ('' without one). Throws what head() throws.
 * @param {Bundle} bundle
 * @param {PageEntry} entry
 * @param {Record<string, unknown>} props
 * @param {LoadContext} ctx
 */
export function renderHead(bundle, entry, props, ctx) {
  const headFn = entry.head;
  // A component that returns head()'s nodes lets them be any ReactNode
  // (an array, a fragment) without the renderer importing React's Fragment.
  return headFn ? bundle.renderToStaticMarkup(bundle.createElement(() => headFn(props, ctx))) : '';
}

/**
 * @param {LoadResult['headers']} headers
 * @returns {Array<{name: string, value: string}>}
 */
function toHeaders(headers) {
  if (!headers) return [];
  if (Array.isArray(headers)) {
    return headers.map((h) => (Array.isArray(h) ? { name: String(h[0]), value: String(h[1]) } : { name: String(h.name), value: String(h.value) }));
  }
  return Object.entries(headers).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : [value]).map((v) => ({ name, value: String(v) })));
}

/**
 * @param {LoadResult} result
 * @returns {import('../decision.js').Decision}
 */
function decided(result) {
  try {
    return decide(result);
  } catch (err) {
    throw pageThrew(err);
  }
}

/** @param {unknown} props */
function stringifyProps(props) {
  try {
    return JSON.stringify(props);
  } catch (err) {
    throw pageThrew(err);
  }
}

/** @param {unknown} err */
export function pageThrew(err) {
  if (err instanceof Error) return new PageThrewError(err.message, { cause: err, stack: err.stack });
  return new PageThrewError(String(err));
}

/** @param {number} ms */
export function micros(ms) {
  return Math.max(0, Math.round(ms * 1000));
}

/** At most this many tags per page, each at most MAX_TAG_LENGTH characters. */
const MAX_TAGS = 64;
const MAX_TAG_LENGTH = 256;

/**
 * load()'s cache.tags, checked: a page that gets them wrong is told, not silently untagged
 * (a purge by tag would then miss it).
 * @param {unknown} tags
 * @returns {string[]}
 */
function cacheTags(tags) {
  if (tags === undefined) return [];
  if (!Array.isArray(tags) || tags.length > MAX_TAGS
    || !tags.every((t) => typeof t === 'string' && t.length > 0 && t.length <= MAX_TAG_LENGTH)) {
    throw new PageThrewError(`load() returned cache.tags that are not an array of at most ${MAX_TAGS} non-empty strings of at most ${MAX_TAG_LENGTH} characters`);
  }
  return tags;
}
