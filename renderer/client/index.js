// The browser half of the app contract (docs/app-contract.md, "Client build"):
// an app's client entry calls start() with its pages and islands. Bundled into the app's
// client build, where react and react-dom resolve to the app's own copies
// (build/index.js), so the React that hydrates is the one that rendered.
// Browser code: tsc's check of the renderer (node types, no DOM) leaves it
// out; the browser test (app/test) runs it.
import { createElement } from 'react';
import { createRoot, hydrateRoot } from 'react-dom/client';
import { decide } from '../src/decision.js';
import { DEFERRED_PROP, trackedPromise } from '../src/deferred-prop.js';

/** @import { App, Page } from '../src/app-contract.js' */

/**
 * Reads the edge's `__SSR_DATA__` ({page, url, params, props?, status?}) and
 * brings `#root` to life:
 * - props and server markup: hydrate it;
 * - props and an empty root (the render failed, a Go loader's props came): render them;
 * - no props, and the page has a load(): run it here, as the renderer would;
 * - no props and no load() (props a Go loader was to give): the error page
 *   with {status}, else an empty root and a warning. The not-found page
 *   renders without props, as the renderer renders it.
 * A document without `__SSR_DATA__` is a Go server's own page: each of its
 * islands is brought to life instead (startIslands).
 * @param {App} app
 */
export function start({ pages, notFoundPage, errorPage, islands = {} }) {
  const dataElement = document.getElementById('__SSR_DATA__');
  if (!dataElement) {
    startIslands(islands);
    return;
  }
  const data = dataElement.textContent ? JSON.parse(dataElement.textContent) : {};
  const root = /** @type {HTMLElement} */ (document.getElementById('root'));
  const name = has(pages, data.page) ? data.page : notFoundPage;
  if (!has(pages, name)) {
    console.warn(`sidecar-ssr: no page "${data.page}" and no notFoundPage to render instead`);
    return;
  }
  // A Go loader's deferred values, each settled as the server rendered with it.
  const deferred = readDeferred();
  const props = data.props && deferred ? { ...data.props, [DEFERRED_PROP]: deferred } : data.props;
  if (props && root.hasChildNodes()) {
    hydrateRoot(root, createElement(pages[name].component, props), { onRecoverableError, onCaughtError });
    return;
  }
  clientRender(root, { ...data, props }, pages, name, notFoundPage, errorPage).catch((error) => {
    console.error('client render failed:', error);
  });
}

/**
 * Brings each island of a Go server's own page to life, each as a React root of its own:
 * `<div data-ssr-island="NAME">` followed by `<script type="application/json"
 * data-ssr-island-props>` holding its props ({} without one). A root with the server's
 * markup is hydrated; an empty one (its render failed or was late) is rendered here. An
 * island the app does not have is left as the server wrote it, with a warning.
 * @param {Record<string, any>} islands
 */
function startIslands(islands) {
  for (const root of document.querySelectorAll('[data-ssr-island]')) {
    const name = /** @type {HTMLElement} */ (root).dataset.ssrIsland ?? '';
    if (!has(islands, name)) {
      console.warn(`sidecar-ssr: no island "${name}" among the islands given to start(): it stays as the server left it`);
      continue;
    }
    const next = root.nextElementSibling;
    try {
      const element = createElement(islands[name], next?.matches('script[data-ssr-island-props]') ? JSON.parse(next.textContent ?? '') : {});
      if (root.hasChildNodes()) hydrateRoot(root, element, { onRecoverableError, onCaughtError });
      else createRoot(root, { onCaughtError }).render(element);
    } catch (error) {
      // Props that are not JSON: this island stays as it is, and the others start.
      console.error(`sidecar-ssr: island "${name}" could not start:`, error);
    }
  }
}

/**
 * @param {HTMLElement} root
 * @param {{url?: string, params?: Record<string, string>, props?: object, status?: number}} data
 * @param {Record<string, Page>} pages
 * @param {string} name
 * @param {string | undefined} notFoundPage
 * @param {string | undefined} errorPage
 */
async function clientRender(root, data, pages, name, notFoundPage, errorPage) {
  let page = pages[name];
  let props = data.props;
  if (!props && page.load) {
    const result =
      (await page.load({
        url: data.url ?? location.pathname + location.search,
        params: data.params ?? {},
        query: queryObject(location.search),
        variants: {},
        props: {},
      })) ?? {};
    const decision = decide(result);
    if ('redirect' in decision) {
      location.replace(decision.redirect);
      return;
    }
    if ('notFound' in decision) {
      if (!has(pages, notFoundPage)) throw new Error(`load() of "${name}" returned notFound and there is no notFoundPage`);
      page = pages[notFoundPage];
      props = {};
    } else {
      props = result.props ?? {};
    }
  } else if (!props && name === notFoundPage) {
    props = {};
  } else if (!props) {
    if (!has(pages, errorPage)) {
      console.warn(`sidecar-ssr: page "${name}" came without its props and has no load() to get them: the root stays empty (an errorPage given to start() would show)`);
      return;
    }
    page = pages[errorPage];
    props = { status: data.status ?? 503 };
  }
  createRoot(root, { onCaughtError }).render(createElement(page.component, props));
}

/**
 * Hydration mismatches land here; the browser test watches the console.
 * @param {unknown} error
 * @param {{componentStack?: string}} info
 */
function onRecoverableError(error, info) {
  console.error('hydration error:', error, info?.componentStack ?? '');
}

/**
 * An error an error boundary of the page caught. A deferred value that failed or came too
 * late is the server's to report (the edge logs and counts it): here it is a warning, the
 * page showing that section's error UI as it should. Anything else is an error, as React
 * reports it by default.
 * @param {unknown} error
 * @param {{componentStack?: string}} info
 */
function onCaughtError(error, info) {
  const log = error instanceof Error && error.name === DEFERRED_ERROR ? console.warn : console.error;
  log('caught by an error boundary:', error, info?.componentStack ?? '');
}

/** The name of the errors deferred values that did not arrive reject with. */
const DEFERRED_ERROR = 'DeferredError';

/**
 * @param {Record<string, unknown>} named pages or islands
 * @param {string | undefined} name
 * @returns {name is string}
 */
function has(named, name) {
  return name !== undefined && Object.hasOwn(named, name);
}

/**
 * The deferred values the edge wrote after the root (one data element each, a value or the
 * error that took its place), as promises already settled; undefined when there are none.
 * The document is complete when the client entry runs (a module script), so every one the
 * server sent is there.
 */
function readDeferred() {
  const elements = document.querySelectorAll('script[type="application/json"][data-ssr-deferred]');
  if (elements.length === 0) return undefined;
  /** @type {Record<string, Promise<unknown>>} */
  const deferred = {};
  for (const el of elements) {
    const { promise, resolve, reject } = trackedPromise();
    const name = /** @type {HTMLElement} */ (el).dataset.ssrDeferred ?? '';
    /** @type {{value?: unknown, error?: string}} */
    let outcome;
    try {
      outcome = JSON.parse(el.textContent ?? '');
    } catch {
      outcome = { error: `deferred value "${name}" is not valid JSON` };
    }
    if (outcome.error !== undefined) reject(Object.assign(new Error(outcome.error), { name: DEFERRED_ERROR }));
    else resolve(outcome.value);
    deferred[name] = promise;
  }
  return deferred;
}

/**
 * The first value of each query parameter, as the renderer gives it to load().
 * @param {string} search
 */
function queryObject(search) {
  /** @type {Record<string, string>} */
  const query = {};
  for (const [key, value] of new URLSearchParams(search)) {
    if (!Object.hasOwn(query, key)) query[key] = value;
  }
  return query;
}
