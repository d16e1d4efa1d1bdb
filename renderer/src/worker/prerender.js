// Partial prerendering (RenderStreamRequest.prerender, render.proto): a page's shell rendered
// once, for the caller to store and resume per request (stream.js resumes it). The request's
// deferred values are its own and are never settled here, so each Suspense boundary that
// reads one is a hole, whose fallback the prelude holds. React's prerender renders whatever
// else it can, and stops when it is aborted: what is pending then is a hole, and the
// postponed state says where each one goes.
import { performance } from 'node:perf_hooks';
import { PageThrewError, PageTooLargeError } from '../errors.js';
import { micros, pageThrew, renderHead } from './render-page.js';
import { RenderAborted } from './renders.js';
import { headMessage, htmlMessage, post } from './stream.js';

/** @import { MessagePort } from 'node:worker_threads' */
/** @import { Bundle, PreparedPage } from './render-page.js' */
/** @import { DeferredValues } from './deferred-values.js' */
/** @import { ResponseFields } from '../threads/wire.js' */
/** @import { HeldRender } from './renders.js' */

/**
 * The reason the prerender is aborted with once it has rendered what it can: React reports
 * it for each boundary it leaves pending, a hole, which is no error.
 */
const HOLE = Object.freeze({ hole: 'the prerender stopped: what is pending is left to the resume' });

const MiB = 1024 * 1024;
const SCRIPT_OPEN = '<script>';
const SCRIPT_CLOSE = '</script>';

/**
 * Prerenders a prepared page to the port. Once the prelude is complete: the head message
 * (its cache hint no_store when a boundary threw, for the prelude then holds that boundary
 * for the browser to render), then the prelude as one `html` message. Resolves with the
 * postponed state as JSON, for the trailer; none when nothing was left pending (the prelude
 * is the whole page). Rejects with PageThrewError when the shell failed or read a deferred
 * value outside every Suspense boundary, PageTooLargeError over maxBytes (the head, the
 * prelude and the state together) having sent nothing, and RenderAborted when the pool
 * aborted it.
 * @param {Bundle} bundle
 * @param {PreparedPage} prepared with its deferred values all pending
 * @param {MessagePort} port
 * @param {(head: string) => ResponseFields} fields the head message's small fields
 * @param {object} options
 * @param {number} options.maxBytes renderer.max_page_mb
 * @param {string} [options.nonce] the caller's placeholder for each response's CSP nonce,
 *   put on React's script at the prelude's end (React's prerender writes none)
 * @param {HeldRender} [options.held] the worker's hold on the render
 * @returns {Promise<{renderStart?: number, renderUs: number, postponed?: Uint8Array}>}
 */
export async function prerenderPage(bundle, prepared, port, fields, { maxBytes, nonce, held }) {
  if (prepared.redirect !== undefined) {
    post(port, headMessage('', fields(''), maxBytes));
    return { renderUs: 0 };
  }
  const { prerenderToNodeStream } = bundle;
  if (typeof prerenderToNodeStream !== 'function') {
    throw new PageThrewError(`page "${prepared.page}" is prerendered, but the bundle does not export prerenderToNodeStream (see docs/app-contract.md)`);
  }
  const { page, entry, props, elementProps, ctx, deferred } = prepared;
  let head;
  try {
    head = renderHead(bundle, entry, props, ctx);
  } catch (err) {
    throw pageThrew(err);
  }
  const read = watchReads(deferred);
  const renderStart = performance.now();
  const controller = new AbortController();
  let boundaryThrew = false;
  // React renders what its data allows in the turns after it starts: data that is there,
  // or comes a moment later, is content only if the abort waits for it (react-dom 19.3.1,
  // aborted sooner: settled data became holes). One immediate, then one timer, does.
  /** @type {NodeJS.Timeout | undefined} */
  let timeout;
  const immediate = setImmediate(() => {
    timeout = setTimeout(() => controller.abort(HOLE), 0);
  });
  held?.onAbort((reason) => controller.abort(new RenderAborted(reason)));
  /** @type {Uint8Array[]} */
  const chunks = [];
  let postponed;
  try {
    const prerendered = await prerenderToNodeStream(bundle.createElement(entry.component, elementProps), {
      signal: controller.signal,
      onError(err) {
        if (err !== HOLE) boundaryThrew = true;
      },
    });
    postponed = prerendered.postponed;
    let bytes = 0;
    for await (const chunk of prerendered.prelude) {
      const bytesOf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      bytes += bytesOf.byteLength;
      if (bytes > maxBytes) throw tooLarge(page, `its prelude passed ${bytes} bytes`, maxBytes);
      chunks.push(bytesOf);
    }
  } catch (err) {
    if (held?.aborted) throw new RenderAborted(held.aborted);
    throw err instanceof PageTooLargeError ? err : pageThrew(err);
  } finally {
    clearImmediate(immediate);
    clearTimeout(timeout);
  }
  if (held?.aborted) throw new RenderAborted(held.aborted);
  // Nothing of the page was complete: it suspended outside every Suspense boundary (or in
  // one at its root).
  if (/** @type {{replaySlots?: unknown} | null} */ (postponed)?.replaySlots === -1) throw noShell(page, read);
  // Only once the whole prelude is read: React completes the state as it writes (react#36779).
  const state = postponed === null ? undefined : Buffer.from(JSON.stringify(postponed));
  const headFields = fields(head);
  if (boundaryThrew) headFields.cache = { ...headFields.cache, noStore: true };
  const headBytes = headMessage(prepared.propsJson, headFields, maxBytes);
  const body = Buffer.concat(chunks);
  const html = body.byteLength > 0 ? htmlMessage(withNonce(body, nonce)) : undefined;
  const total = headBytes.byteLength + (html?.byteLength ?? 0) + (state?.byteLength ?? 0);
  if (total > maxBytes) throw tooLarge(page, `its head, prelude and postponed state are ${total} bytes`, maxBytes);
  post(port, headBytes);
  if (html) post(port, html);
  return { renderStart, renderUs: micros(performance.now() - renderStart), postponed: state };
}

/**
 * Notes which deferred values the page reads. React's use() calls a pending thenable's
 * `then`, to learn when it settles: each promise's own `then` notes its name first.
 * @param {DeferredValues | undefined} deferred
 * @returns {Set<string>}
 */
function watchReads(deferred) {
  /** @type {Set<string>} */
  const read = new Set();
  for (const [name, promise] of Object.entries(deferred?.prop ?? {})) {
    const then = promise.then;
    Object.defineProperty(promise, 'then', {
      configurable: true,
      writable: true,
      value: (/** @type {any} */ onFulfilled, /** @type {any} */ onRejected) => {
        read.add(name);
        return then.call(promise, onFulfilled, onRejected);
      },
    });
  }
  return read;
}

/**
 * The prelude's chunks, with the caller's nonce placeholder on React's script at its end:
 * the one script prerender writes, bare. Every other byte is the page's, untouched.
 * @param {Buffer} body
 * @param {string | undefined} nonce
 * @returns {Array<string | Uint8Array>}
 */
function withNonce(body, nonce) {
  if (!nonce) return [body];
  const at = body.lastIndexOf(SCRIPT_OPEN);
  if (at === -1 || body.indexOf(SCRIPT_CLOSE, at) !== body.byteLength - SCRIPT_CLOSE.length) return [body];
  const name = at + SCRIPT_OPEN.length - 1;
  return [body.subarray(0, name), ` nonce="${escapeAttribute(nonce)}"`, body.subarray(name)];
}

/**
 * As React escapes an attribute's value, so that the placeholder reads the same here as in
 * the scripts React writes itself.
 * @param {string} value
 */
function escapeAttribute(value) {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#x27;' })[c] ?? c);
}

/**
 * @param {string} page
 * @param {Set<string>} read the deferred values it read
 */
function noShell(page, read) {
  // react-dom (19.3) postpones the whole shell too for a boundary at the page's root, in no
  // element: a page that reads its values in boundaries hears of both causes.
  const where = 'a Suspense boundary inside an element (a boundary at the page\'s root, outside every element, '
    + 'postpones the whole shell)';
  if (read.size === 0) {
    return new PageThrewError(`page "${page}" has no shell to prerender: it suspended on something still pending when the `
      + `prerender stopped, outside ${where}`);
  }
  const names = [...read].map((name) => JSON.stringify(name)).join(', ');
  return new PageThrewError(`page "${page}" read per-request value${read.size === 1 ? '' : 's'} ${names} outside ${where}: `
    + 'a partially prerendered page reads each inside one, whose fallback is prerendered');
}

/**
 * @param {string} page
 * @param {string} what
 * @param {number} maxBytes
 */
function tooLarge(page, what, maxBytes) {
  return new PageTooLargeError(`page "${page}" is too large to prerender: ${what}, over the ${maxBytes / MiB} MB limit of renderer.max_page_mb`);
}
