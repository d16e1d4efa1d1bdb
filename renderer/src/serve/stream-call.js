// A render of a page that streams, whichever carries it (a RenderStream call, or a Channel's
// render: channel.js): the worker posts each message on a port of the task's own
// (worker/stream.js), already encoded, and this thread passes them on as they come. Each
// deferred value the caller settles is posted to the worker on the same port. A render
// tried again on another worker (its worker died for another render before any of it was
// sent) gets a port of its own, and the values settled so far again.
import { MessageChannel } from 'node:worker_threads';
import { ownDeferred } from '../pool/own-buffers.js';
import { serveRender } from './render-call.js';

/** @import * as grpc from '@grpc/grpc-js' */
/** @import { MessagePort } from 'node:worker_threads' */
/** @import { SettledMessage, StreamMessage, WireDeferred } from '../threads/messages.js' */
/** @import { RenderError } from '../errors.js' */
/** @import { RenderDeps } from './render-call.js' */

/**
 * Where a streaming render's messages go: each as it comes (`message`), then its trailer
 * message with the trailer metadata (`succeeded`), or its failure (`failed`), after a head
 * too: the caller closes the document it was streaming.
 * @typedef {object} StreamOut
 * @property {(bytes: Uint8Array) => void} message
 * @property {(trailerMessage: Uint8Array, trailer: grpc.Metadata) => void} succeeded
 * @property {(error: RenderError) => void} failed
 */

/**
 * Starts the render of a RenderStreamRequest's first message.
 * @param {RenderDeps} deps
 * @param {grpc.ServerUnaryCall<any, any>} call what serveRender reads of a call (its
 *   metadata, deadline, cancellation)
 * @param {{render: any, nonce?: string, prerender?: boolean, resume?: Uint8Array}} first
 * @param {StreamOut} out
 * @returns {{settle: (d: WireDeferred) => void, done: Promise<void>}} settle passes a
 *   deferred value on to the render; done resolves once the render has answered
 */
export function streamRender(deps, call, first, out) {
  /** @type {WireDeferred[]} */
  const settledSoFar = [];
  /** @type {MessagePort | undefined} the port of the render's current try */
  let current;
  /** @type {Promise<void>} resolves once the current try posted its last message */
  let posted = Promise.resolve();
  let begun = false;
  let answered = false;
  const open = () => {
    current?.close();
    const { port1, port2 } = new MessageChannel();
    current = port1;
    posted = new Promise((resolve) => {
      port1.on('message', (/** @type {StreamMessage} */ message) => {
        if ('end' in message) resolve();
        else if (!answered) {
          begun = true;
          out.message(message.bytes);
        }
      });
      port1.once('close', () => resolve());
    });
    for (const d of settledSoFar) settle(port1, d);
    return port2;
  };
  const done = serveRender(deps, call, first.render, {
    stream: { open, begun: () => begun },
    nonce: first.nonce,
    prerender: first.prerender,
    resume: first.resume,
    succeeded: async (trailerMessage, trailer) => {
      await posted;
      answered = true;
      out.succeeded(trailerMessage, trailer);
    },
    failed: (error) => {
      answered = true;
      out.failed(error);
    },
  }).finally(() => current?.close());
  return {
    settle(d) {
      settledSoFar.push(d);
      if (current) settle(current, d);
    },
    done,
  };
}

/** @param {MessagePort} port @param {WireDeferred} d */
function settle(port, d) {
  const { value, transfer } = ownDeferred(d);
  /** @type {SettledMessage} */
  const settled = { settled: value };
  port.postMessage(settled, transfer);
}
