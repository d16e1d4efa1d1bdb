// A page that streams (RenderStream, render.proto): React's renderToPipeableStream
// in this worker, or for a page resumed from a prerender (RenderStreamRequest.resume)
// resumeToPipeableStream, its output sent to the main thread over the task's own
// MessagePort as it is produced, each message already encoded as a
// RenderStreamResponse whose buffer is transferred (the same spirit as
// threads/wire.js: the main thread hands grpc-js finished bytes).
//
// Chunks are gathered between React's flushes: React writes many small views
// (a 4 KB buffer, or a long string on its own) and then calls the
// destination's flush() once per batch of completed work (the shell, a
// boundary). One message per flush, not per write, keeps the messages, the
// HTTP/2 frames and the edge's flushes to one per boundary.
import { AsyncResource } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import protobuf from 'protobufjs';
import { PageThrewError, PageTooLargeError } from '../errors.js';
import { allocMessage, encodeRenderResponse, fieldHeaderLength, PROTO_PATH, writeFieldHeader } from '../threads/wire.js';
import { pageThrew, micros, renderHead } from './render-page.js';

/** @import { MessagePort } from 'node:worker_threads' */
/** @import { Bundle, PipeableOptions, PipeableStream, PreparedPage } from './render-page.js' */
/** @import { ResponseFields } from '../threads/wire.js' */
/** @import { SettledMessage, StreamMessage } from '../threads/messages.js' */
/** @import { HeldRender } from './renders.js' */

/** Field numbers of RenderStreamResponse's oneof. */
const HEAD_FIELD = 1;
const HTML_FIELD = 2;

/** @type {protobuf.Type | undefined} */
let streamType;

/**
 * Renders a prepared page to the port: the head message at the shell (or at
 * once for a redirect), then the body as React flushes it. Resolves when React
 * has written everything; rejects with PageThrewError when the shell failed.
 * A boundary that throws after the shell is React's to handle: it sends the
 * browser an instruction to render that boundary itself.
 *
 * A page resumed from a prerender (prepared.postponed) has its shell already, in the
 * caller's stored prelude: its head (empty, as resumedPage() made it) goes at once, and
 * the body is what goes after the prelude: the holes' content and React's scripts that
 * put it in place, or have the browser render a hole that failed.
 *
 * Once React has it, the render waits for data whenever none of its callbacks
 * runs (renders.js): the worker takes other renders meanwhile. The pool's abort
 * is React's abort(): the pending boundaries end as the browser's to render, and
 * the stream ends.
 * @param {Bundle} bundle
 * @param {PreparedPage} prepared
 * @param {MessagePort} port
 * @param {(head: string) => ResponseFields} fields the head message's small fields
 * @param {object} options
 * @param {number} options.maxBytes renderer.max_page_mb, over the head and the body
 * @param {string} [options.nonce] on React's inline scripts: the caller's placeholder for
 *   each response's CSP nonce (RenderStreamRequest.nonce)
 * @param {HeldRender} [options.held] the worker's hold on the render
 * @returns {Promise<{renderStart?: number, renderUs: number}>}
 */
export function streamPage(bundle, prepared, port, fields, { maxBytes, nonce, held }) {
  if (prepared.redirect !== undefined) {
    post(port, headMessage('', fields(''), maxBytes));
    return Promise.resolve({ renderUs: 0 });
  }
  const { entry, props, elementProps, ctx, deferred, postponed } = prepared;
  const resumed = postponed !== undefined;
  const { renderToPipeableStream, resumeToPipeableStream } = bundle;
  /** @type {((element: unknown, options: PipeableOptions) => PipeableStream) | undefined} */
  const start = resumed
    ? resumeToPipeableStream && ((element, options) => resumeToPipeableStream(element, postponed, options))
    : renderToPipeableStream;
  if (typeof start !== 'function') {
    const [does, missing] = resumed ? ['resumes a prerender', 'resumeToPipeableStream'] : ['streams', 'renderToPipeableStream'];
    return Promise.reject(new PageThrewError(`page "${prepared.page}" ${does}, but the bundle does not export ${missing} (see docs/app-contract.md)`));
  }
  // The caller's deferred values, settled while React waits on them (main thread: grpc-server.js).
  if (deferred) {
    // Bound to the render: the port came with the task, before the render began, so its
    // callbacks would otherwise run as no render (renders.js charges them to this one).
    port.on('message', AsyncResource.bind((/** @type {SettledMessage} */ m) => deferred.settle(m.settled)));
  }
  let head = '';
  try {
    if (!resumed) head = renderHead(bundle, entry, props, ctx);
  } catch (err) {
    return Promise.reject(pageThrew(err));
  }
  const renderStart = performance.now();
  return new Promise((resolve, reject) => {
    let sent = 0;
    /** @type {PageTooLargeError | undefined} */
    let tooLarge;
    const destination = new Destination(port, (bytes) => {
      sent += bytes;
      if (sent <= maxBytes) return true;
      tooLarge ??= new PageTooLargeError(`page "${prepared.page}" is too large: its body passed ${sent} bytes, `
        + `over the ${maxBytes / (1024 * 1024)} MB limit of renderer.max_page_mb`);
      stream.abort(tooLarge);
      return false;
    }, () => {
      if (tooLarge) reject(tooLarge);
      else resolve({ renderStart, renderUs: micros(performance.now() - renderStart) });
    });
    /** @type {PipeableStream} */
    let stream;
    const sendHead = () => {
      const message = headMessage(prepared.propsJson, fields(head), maxBytes);
      sent = message.byteLength;
      post(port, message);
    };
    // Before the try: a head over maxBytes fails as too large, not as the page's throw.
    if (resumed) sendHead();
    try {
      stream = start(bundle.createElement(entry.component, elementProps), {
        nonce,
        onShellReady() {
          if (!resumed) sendHead();
          stream.pipe(destination);
        },
        onShellError(err) {
          reject(pageThrew(err));
        },
        // A boundary's error: React sends the browser its client-render
        // instruction, and the rest of the page streams on.
        onError() {},
      });
    } catch (err) {
      reject(pageThrew(err));
      return;
    }
    held?.onAbort((reason) => stream.abort(new Error(reason.message)));
  });
}

/**
 * The minimal Writable React's pipe() needs: write, end, on, and flush, which
 * React calls after each batch of writes.
 */
class Destination {
  /** @type {Array<string | Uint8Array>} */
  #pending = [];
  #port;
  #admit;
  #ended;

  /**
   * @param {MessagePort} port
   * @param {(bytes: number) => boolean} admit counts each message's bytes; false: too large, drop it
   * @param {() => void} ended
   */
  constructor(port, admit, ended) {
    this.#port = port;
    this.#admit = admit;
    this.#ended = ended;
  }

  /** @param {string | Uint8Array} chunk */
  write(chunk) {
    this.#pending.push(chunk);
    return true;
  }

  flush() {
    if (this.#pending.length === 0) return;
    const out = htmlMessage(this.#pending);
    this.#pending = [];
    if (this.#admit(out.byteLength)) post(this.#port, out);
  }

  end() {
    this.flush();
    this.#ended();
  }

  // React listens for drain, error and close: this destination never emits them.
  on() {
    return this;
  }
}

/**
 * The UTF-8 length of what React wrote.
 * @param {Array<string | Uint8Array>} chunks
 */
export function byteLengthOf(chunks) {
  let length = 0;
  for (const chunk of chunks) length += typeof chunk === 'string' ? Buffer.byteLength(chunk, 'utf8') : chunk.byteLength;
  return length;
}

/**
 * Writes what React wrote into out from at, strings as UTF-8.
 * @param {Buffer} out
 * @param {number} at
 * @param {Array<string | Uint8Array>} chunks
 */
export function writeChunks(out, at, chunks) {
  for (const chunk of chunks) {
    if (typeof chunk === 'string') at += out.write(chunk, at, 'utf8');
    else {
      out.set(chunk, at);
      at += chunk.byteLength;
    }
  }
}

/**
 * The trailer message: the render's timing, and a prerender's postponed state.
 * @param {ResponseFields['timing']} timing
 * @param {Uint8Array} [postponed] RenderStreamTrailer.postponed (worker/prerender.js)
 * @returns {Uint8Array}
 */
export function encodeTrailer(timing, postponed) {
  streamType ??= protobuf.loadSync(PROTO_PATH).lookupType('ssr.v1.RenderStreamResponse');
  const encoded = streamType.encode({ trailer: { timing, ...(postponed && { postponed }) } }).finish();
  const out = allocMessage(encoded.byteLength);
  out.set(encoded);
  return out;
}

/**
 * The head message: a RenderResponse of the small fields and the props, as
 * RenderStreamResponse's `head`. Throws PageTooLargeError as encodeRenderResponse() does.
 * @param {string} propsJson
 * @param {ResponseFields} fields
 * @param {number} maxBytes
 */
export function headMessage(propsJson, fields, maxBytes) {
  return wrap(HEAD_FIELD, encodeRenderResponse('', propsJson, fields, maxBytes));
}

/**
 * An `html` message of what React wrote.
 * @param {Array<string | Uint8Array>} chunks
 */
export function htmlMessage(chunks) {
  const length = byteLengthOf(chunks);
  const out = allocMessage(fieldHeaderLength(length) + length);
  writeChunks(out, writeFieldHeader(out, 0, HTML_FIELD, length), chunks);
  return out;
}

/**
 * @param {MessagePort} port
 * @param {Uint8Array} bytes transferred: gone from this thread once posted
 */
export function post(port, bytes) {
  /** @type {StreamMessage} */
  const message = { bytes };
  port.postMessage(message, [/** @type {ArrayBuffer} */ (bytes.buffer)]);
}

/**
 * An encoded RenderResponse as RenderStreamResponse's `head`.
 * @param {number} field
 * @param {Uint8Array} inner
 */
function wrap(field, inner) {
  const out = allocMessage(fieldHeaderLength(inner.byteLength) + inner.byteLength);
  out.set(inner, writeFieldHeader(out, 0, field, inner.byteLength));
  return out;
}
