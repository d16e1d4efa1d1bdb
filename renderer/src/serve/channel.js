// Channel (render.proto): many renders on one long-lived stream, each a message with an id.
// Each render goes the way its own call would (serveRender, streamRender, the islands'
// handler), given a ChannelCall in place of the call: the metadata, deadline and
// cancellation its call would have carried, read from its message. Its responses go out
// through the channel's Replies. A render's failure is its own; the channel ends only when
// the caller ends it or goes away (every render in flight on it is then cancelled), or when
// the renderer shuts down, once its renders have answered.
import { EventEmitter } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import { renderIslandsHandler } from './islands.js';
import { RENDERER_TIME_TRAILER, serveRender, toServiceError } from './render-call.js';
import { Replies } from './replies.js';
import { streamRender } from './stream-call.js';

/** @import { RenderDeps } from './render-call.js' */
/** @import { WireDeferred } from '../threads/messages.js' */

/**
 * What serveRender and the islands' handler read of a call, for one render of a channel.
 * Its 'cancelled' event is the render's cancel message, or its channel's end.
 */
class ChannelCall extends EventEmitter {
  cancelled = false;
  #deadline;

  /**
   * @param {any} message the ChannelRequest
   * @param {any} [request] the request the render's call would have carried (RenderIslands')
   */
  constructor(message, request) {
    super();
    this.request = request;
    // Counted from the message's arrival, as a call's deadline is from its own.
    this.#deadline = message.deadlineMs > 0 ? new Date(Date.now() + message.deadlineMs) : Infinity;
    this.metadata = new grpc.Metadata();
    if (message.requestId) this.metadata.set('x-request-id', message.requestId);
    if (message.traceparent) this.metadata.set('traceparent', message.traceparent);
    if (message.tracestate) this.metadata.set('tracestate', message.tracestate);
  }

  getDeadline() {
    return this.#deadline;
  }

  cancel() {
    if (this.cancelled) return;
    this.cancelled = true;
    this.emit('cancelled');
  }
}

/** The renderer's open channels, to end at shutdown. */
export class Channels {
  /** @type {Set<() => void>} each ends its channel once its renders have answered */
  #closers = new Set();
  #closing = false;

  /**
   * The handler of Channel.
   * @param {RenderDeps} deps
   * @param {number} maxPageBytes renderer.max_page_mb, for the islands' replies
   * @returns {grpc.handleBidiStreamingCall<any, Buffer>}
   */
  handler(deps, maxPageBytes) {
    const islands = renderIslandsHandler(deps, maxPageBytes);
    return (call) => {
      const replies = new Replies(call);
      /** @type {Map<number, {call: ChannelCall, settle?: (d: WireDeferred) => void}>} */
      const inFlight = new Map();
      let closing = this.#closing;
      const close = () => {
        closing = true;
        if (inFlight.size === 0) call.end();
      };
      this.#closers.add(close);
      /** @param {number} id */
      const ended = (id) => {
        inFlight.delete(id);
        if (closing && inFlight.size === 0) call.end();
      };
      call.on('data', (/** @type {any} */ message) => {
        const id = Number(message.id);
        const render = inFlight.get(id);
        if (message.settled) render?.settle?.(message.settled);
        else if (message.cancel) render?.call.cancel();
        else if (render) {
          replies.fail(id, { code: grpc.status.INVALID_ARGUMENT, details: `Channel: render ${id} is already in flight` });
        } else if (message.render || message.stream || message.islands) {
          const rcall = new ChannelCall(message, message.islands);
          const started = { call: rcall, settle: /** @type {((d: WireDeferred) => void) | undefined} */ (undefined) };
          inFlight.set(id, started);
          start(deps, islands, replies, id, rcall, message, (settle) => { started.settle = settle; })
            .finally(() => ended(id));
        } else {
          replies.fail(id, { code: grpc.status.INVALID_ARGUMENT, details: 'Channel: a message with no part' });
        }
      });
      const gone = () => {
        this.#closers.delete(close);
        for (const { call: rcall } of inFlight.values()) rcall.cancel();
      };
      call.once('cancelled', gone);
      call.once('error', gone);
      // The caller closed its side: what is in flight still answers, then the channel ends.
      call.once('end', () => {
        this.#closers.delete(close);
        close();
      });
      if (closing) close();
    };
  }

  /** Ends every channel once its renders have answered, and any opened from now on at once. */
  close() {
    this.#closing = true;
    for (const close of this.#closers) close();
  }
}

/**
 * Starts one render of a channel; resolves once it has answered.
 * @param {RenderDeps} deps
 * @param {ReturnType<typeof renderIslandsHandler>} islands
 * @param {Replies} replies
 * @param {number} id
 * @param {ChannelCall} rcall
 * @param {any} message
 * @param {(settle: (d: WireDeferred) => void) => void} settles where a streaming render's
 *   deferred values go from now on
 * @returns {Promise<void>}
 */
function start(deps, islands, replies, id, rcall, message, settles) {
  const call = /** @type {grpc.ServerUnaryCall<any, any>} */ (/** @type {unknown} */ (rcall));
  if (message.render) {
    return serveRender(deps, call, message.render, {
      succeeded: async (response, trailer) => replies.send(id, 'rendered', response, rendererUs(trailer)),
      failed: (error) => replies.fail(id, toServiceError(error)),
    });
  }
  if (message.stream) {
    const render = streamRender(deps, call, message.stream, {
      message: (bytes) => replies.send(id, 'streamed', bytes),
      succeeded: (trailerMessage, trailer) => replies.send(id, 'streamed', trailerMessage, rendererUs(trailer)),
      failed: (error) => replies.fail(id, toServiceError(error)),
    });
    settles(render.settle);
    return render.done;
  }
  return new Promise((resolve) => {
    islands(call, (error, reply) => {
      if (error) replies.fail(id, error);
      else replies.send(id, 'islands', /** @type {Buffer} */ (reply));
      resolve();
    });
  });
}

/** @param {grpc.Metadata} trailer */
function rendererUs(trailer) {
  const [us] = trailer.get(RENDERER_TIME_TRAILER);
  return us === undefined ? undefined : Number(us);
}
