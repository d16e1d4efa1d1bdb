// What a Channel sends (channel.js): each render's responses, framed around the bytes the
// worker encoded without copying them, cut into pieces when large, the pieces of several
// renders sent in turn.
//
// A response is the render's message (a RenderResponse, RenderStreamResponse or
// RenderIslandsResponse, encoded by the worker with HEADROOM free in front of it:
// threads/wire.js) inside a ChannelResponse, whose own fields (id, renderer_us, the part's
// tag and length) are written into that headroom: grpc-js then frames the whole as it would
// the bare message, with the one copy it makes of any message. A response over PIECE_BYTES
// goes as pieces (ChannelResponse.piece), each a copy of its slice with a few bytes in front,
// and between two of its pieces go the other renders' responses waiting: a 10 MB page holds
// a small one behind it by the pieces in flight and one more, not by the page.
import { HEADROOM, protoType, writeVarint } from '../threads/wire.js';

/** @import * as grpc from '@grpc/grpc-js' */

/** Above this, a response goes in pieces of this size (render.proto says 256 KiB). */
export const PIECE_BYTES = 256 * 1024;

/**
 * At most this many bytes handed to grpc-js and not yet written to the socket: beyond it,
 * the next piece waits for room, and what is queued behind it may pass it.
 */
const IN_FLIGHT_BYTES = 2 * PIECE_BYTES;

const LENGTH_DELIMITED = 2;
const VARINT = 0;

/** @type {Record<string, number> | undefined} ChannelResponse's field numbers, from render.proto */
let fieldsOf;
/** @type {import('protobufjs').Type | undefined} */
let errorType;

/** ChannelResponse's field numbers by name (protobufjs's camelCase). */
export function responseFields() {
  if (!fieldsOf) {
    const type = protoType('ssr.v1.ChannelResponse');
    fieldsOf = Object.fromEntries(Object.values(type.fields).map((f) => [f.name, f.id]));
  }
  return fieldsOf;
}

/**
 * A render's message, or its failure, as its ChannelResponse.
 * @typedef {'rendered' | 'streamed' | 'islands'} Part
 */

/** The responses of one channel, written to its call in turn. */
export class Replies {
  #call;
  /** @type {Array<{id: number, message: Buffer, at: number}>} responses waiting, each sent from `at` on */
  #waiting = [];
  #inFlight = 0;

  /** @param {grpc.ServerDuplexStream<any, any>} call */
  constructor(call) {
    this.#call = call;
  }

  /**
   * Sends a render's message.
   * @param {number} id
   * @param {Part} part
   * @param {Uint8Array} message as the worker encoded it (HEADROOM free in front), or any bytes
   * @param {number} [rendererUs] with a render's end
   */
  send(id, part, message, rendererUs) {
    this.#queue(id, frame(id, responseFields()[part], message, rendererUs));
  }

  /**
   * Sends a render's failure: the status and `ssr-error` its call would have ended with.
   * @param {number} id
   * @param {{code?: number, details?: string, metadata?: grpc.Metadata}} error a service error
   */
  fail(id, error) {
    errorType ??= protoType('ssr.v1.ChannelError');
    const [code] = error.metadata?.get('ssr-error') ?? [];
    const encoded = errorType.encode(errorType.fromObject({
      status: error.code ?? 13, code: code === undefined ? 0 : String(code), message: error.details ?? '',
    })).finish();
    this.#queue(id, frame(id, responseFields().error, encoded));
  }

  /** @param {number} id @param {Buffer} message a whole ChannelResponse */
  #queue(id, message) {
    this.#waiting.push({ id, message, at: 0 });
    this.#pump();
  }

  #pump() {
    while (this.#waiting.length > 0 && this.#inFlight < IN_FLIGHT_BYTES) {
      const next = /** @type {{id: number, message: Buffer, at: number}} */ (this.#waiting.shift());
      let out = next.message;
      if (next.message.byteLength > PIECE_BYTES) {
        const end = Math.min(next.at + PIECE_BYTES, next.message.byteLength);
        out = piece(next.id, next.message.subarray(next.at, end), end === next.message.byteLength);
        next.at = end;
        if (end < next.message.byteLength) this.#waiting.push(next);
      }
      const bytes = out.byteLength;
      this.#inFlight += bytes;
      // The callback comes once grpc-js has handed the bytes to the socket; never for a call
      // that has ended, whose replies no longer matter.
      this.#call.write(out, () => {
        this.#inFlight -= bytes;
        this.#pump();
      });
    }
  }
}

/**
 * A ChannelResponse around a message: its own fields written into the headroom in front of
 * the message when it has one, else a copy.
 * @param {number} id
 * @param {number} field the part's
 * @param {Uint8Array} message
 * @param {number} [rendererUs]
 * @returns {Buffer}
 */
export function frame(id, field, message, rendererUs) {
  const head = Buffer.allocUnsafe(HEADROOM);
  let at = writeVarintField(head, 0, responseFields().id, id);
  if (rendererUs) at = writeVarintField(head, at, responseFields().rendererUs, rendererUs);
  at = writeTag(head, at, field, LENGTH_DELIMITED);
  at = writeVarint(head, at, message.byteLength);
  if (hasHeadroom(message)) {
    const start = message.byteOffset - at;
    const out = Buffer.from(message.buffer, start, at + message.byteLength);
    head.copy(out, 0, 0, at);
    return out;
  }
  return Buffer.concat([head.subarray(0, at), message]);
}

/**
 * Whether a message was allocated by wire.js's allocMessage: HEADROOM in front of it, and
 * nothing after it, in an ArrayBuffer of its own.
 * @param {Uint8Array} message
 */
function hasHeadroom(message) {
  return message.byteOffset === HEADROOM && message.buffer.byteLength === HEADROOM + message.byteLength;
}

/**
 * @param {number} id
 * @param {Uint8Array} slice
 * @param {boolean} last
 */
function piece(id, slice, last) {
  const fields = responseFields();
  const out = Buffer.allocUnsafe(HEADROOM + slice.byteLength + 2);
  let at = writeVarintField(out, 0, fields.id, id);
  at = writeTag(out, at, fields.piece, LENGTH_DELIMITED);
  at = writeVarint(out, at, slice.byteLength);
  out.set(slice, at);
  at += slice.byteLength;
  if (last) at = writeVarintField(out, at, fields.lastPiece, 1);
  return out.subarray(0, at);
}

/** @param {Buffer} out @param {number} at @param {number} field @param {number} value */
function writeVarintField(out, at, field, value) {
  return writeVarint(out, writeTag(out, at, field, VARINT), value);
}

/** @param {Buffer} out @param {number} at @param {number} field @param {number} type */
function writeTag(out, at, field, type) {
  return writeVarint(out, at, field * 8 + type);
}
