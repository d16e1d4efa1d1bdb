// The .proto's location, a RenderResponse encoded inside the worker, and a
// RenderIslandsResponse assembled around such bytes: by the worker that rendered the
// islands together, or on the main thread from islands rendered one by one
// (docs/architecture.md, "The wire format").
//
// Encoding where the HTML string is born, straight into one buffer that is
// then transferred, means the renderer's main thread hands grpc-js finished
// bytes: it allocates no per-request copy of the page of its own (grpc-js
// still makes one when it frames the message). Every such copy there is
// ArrayBuffer memory that V8 counts towards its next full GC of the main
// thread, and those GCs, run on V8's helper threads, were the largest cost of
// the hop (bench/README.md).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { PageTooLargeError } from '../errors.js';

/** @import { ErrorCode } from '../errors.js' */

export const RENDER_PROTO = 'ssr/v1/render.proto';
const PACKAGED_PROTO_ROOT = fileURLToPath(new URL('../../proto/', import.meta.url));
/**
 * The package's own copy (npm pack puts one there: package.json's prepack),
 * else the repository's proto/, the one source, in a checkout.
 */
export const PROTO_ROOT = existsSync(join(PACKAGED_PROTO_ROOT, RENDER_PROTO))
  ? PACKAGED_PROTO_ROOT
  : fileURLToPath(new URL('../../../proto/', import.meta.url));
export const PROTO_PATH = join(PROTO_ROOT, RENDER_PROTO);

/** Field numbers of the two large fields in render.proto's RenderResponse. */
const HTML_FIELD = 1;
const PROPS_JSON_FIELD = 6;
/** RenderIslandsResponse.islands, and IslandResult's two outcomes. */
const ISLANDS_FIELD = 1;
const RENDERED_FIELD = 1;
const ERROR_FIELD = 2;
const LENGTH_DELIMITED = 2;

/**
 * Everything in a RenderResponse except its two large fields, in
 * proto-loader's camelCase names; uint64s as numbers.
 * @typedef {object} ResponseFields
 * @property {string} head
 * @property {number} status
 * @property {Array<{name: string, value: string}>} headers
 * @property {{maxAgeSeconds: number, noStore: boolean, tags: string[]}} cache
 * @property {string} page
 * @property {string} bundleId
 * @property {string} [clientBuildId] the client build the bundle goes with; empty or absent: none named
 * @property {{queueUs: number, loadUs: number, renderUs: number, workerUs: number, workerId: number,
 *   heapUsedBytes: number, heapLimitBytes: number, externalBytes: number}} timing
 */

/** @type {protobuf.Root | undefined} */
let root;
/** @type {protobuf.Type | undefined} */
let responseType;
/** @type {protobuf.Type | undefined} */
let islandErrorType;

/**
 * A message type of render.proto, loaded once per thread.
 * @param {string} name
 */
export function protoType(name) {
  root ??= protobuf.loadSync(PROTO_PATH);
  return root.lookupType(name);
}

const MiB = 1024 * 1024;

/**
 * Bytes left free in front of every message encoded here for the wire: there the main
 * thread writes the fields a Channel response adds around it (its id, its part's tag and
 * length: serve/replies.js), so that the message is passed on without a copy of its own.
 * At most 1 + 10 (id) + 1 + 10 (renderer_us) + 1 + 5 (the part's tag and length).
 */
export const HEADROOM = 28;

/**
 * A buffer of `length` bytes for a message, with HEADROOM free in front of it in the same
 * ArrayBuffer, which holds nothing else (transferable).
 * @param {number} length
 */
export function allocMessage(length) {
  return Buffer.allocUnsafeSlow(HEADROOM + length).subarray(HEADROOM);
}

/**
 * A RenderResponse measured, its small fields encoded, ready to be written where it goes
 * (writeRenderResponse): alone, or inside a RenderIslandsResponse.
 * @typedef {object} PreparedResponse
 * @property {string} html
 * @property {string} propsJson
 * @property {number} htmlBytes
 * @property {number} propsBytes
 * @property {Uint8Array} rest the small fields, encoded
 * @property {number} byteLength the message's
 */

/**
 * A RenderResponse, measured: html and propsJson will be written as UTF-8 straight into
 * the buffer that holds the message; the small fields follow them, encoded by protobufjs
 * (a message may list its fields in any order). Throws PageTooLargeError, having allocated
 * nothing of the page's size, when the message would be longer than `maxBytes`.
 * @param {string} html
 * @param {string} propsJson
 * @param {ResponseFields} fields
 * @param {number} [maxBytes] the largest message the edge takes (renderer.max_page_mb)
 * @returns {PreparedResponse}
 */
export function prepareRenderResponse(html, propsJson, fields, maxBytes = Infinity) {
  responseType ??= protoType('ssr.v1.RenderResponse');
  // Counting UTF-8 bytes is a scan without a copy: measure before protobufjs
  // copies a huge head, or the page is copied into a buffer nobody will read.
  const htmlBytes = Buffer.byteLength(html, 'utf8');
  const propsBytes = Buffer.byteLength(propsJson, 'utf8');
  const parts = { htmlBytes, propsBytes, headBytes: Buffer.byteLength(fields.head, 'utf8') };
  const atLeast = htmlBytes + propsBytes + parts.headBytes;
  if (atLeast > maxBytes) tooLarge(`at least ${atLeast}`, parts, fields.page, maxBytes);
  const rest = responseType.encode(fields).finish();
  const byteLength = fieldHeaderLength(htmlBytes) + htmlBytes + fieldHeaderLength(propsBytes) + propsBytes + rest.length;
  // The edge bounds the whole message, framing and small fields included.
  if (byteLength > maxBytes) tooLarge(String(byteLength), parts, fields.page, maxBytes);
  return { html, propsJson, htmlBytes, propsBytes, rest, byteLength };
}

/**
 * The wire bytes of a RenderResponse, in a buffer of their own (transferable);
 * prepareRenderResponse() says what it throws.
 * @param {string} html
 * @param {string} propsJson
 * @param {ResponseFields} fields
 * @param {number} [maxBytes]
 * @returns {Buffer}
 */
export function encodeRenderResponse(html, propsJson, fields, maxBytes = Infinity) {
  const prepared = prepareRenderResponse(html, propsJson, fields, maxBytes);
  const out = allocMessage(prepared.byteLength);
  writeRenderResponse(out, 0, prepared);
  return out;
}

/**
 * @param {Buffer} out
 * @param {number} at
 * @param {PreparedResponse} prepared
 * @returns {number} the offset after it
 */
function writeRenderResponse(out, at, { html, propsJson, htmlBytes, propsBytes, rest }) {
  at = writeFieldHeader(out, at, HTML_FIELD, htmlBytes);
  at += out.write(html, at, 'utf8');
  at = writeFieldHeader(out, at, PROPS_JSON_FIELD, propsBytes);
  at += out.write(propsJson, at, 'utf8');
  out.set(rest, at);
  return at + rest.length;
}

/**
 * The wire bytes of a RenderIslandsResponse, in a buffer of their own (transferable): one
 * IslandResult per outcome, in order. A rendered island's RenderResponse is written in
 * place when prepared, or copied in verbatim as encodeRenderResponse() gave it (nobody
 * decodes an island's HTML); a failure becomes an IslandError. Throws PageTooLargeError,
 * having allocated nothing, when the message would be longer than `maxBytes`.
 * @param {Array<Uint8Array | PreparedResponse | {code: ErrorCode, message: string}>} outcomes
 * @param {number} [maxBytes] the largest message the edge takes (renderer.max_page_mb)
 * @returns {Buffer}
 */
export function encodeIslandsResponse(outcomes, maxBytes = Infinity) {
  const errorType = (islandErrorType ??= protoType('ssr.v1.IslandError'));
  const results = outcomes.map((outcome) => {
    const [field, message] = 'code' in outcome
      ? [ERROR_FIELD, errorType.encode(errorType.fromObject({ code: outcome.code, message: outcome.message })).finish()]
      : [RENDERED_FIELD, outcome];
    return { field, message, length: fieldHeaderLength(message.byteLength) + message.byteLength };
  });
  const total = results.reduce((sum, { length }) => sum + fieldHeaderLength(length) + length, 0);
  if (total > maxBytes) {
    throw new PageTooLargeError(`the islands' response would be ${total} bytes, over the ${maxBytes / MiB} MB limit of renderer.max_page_mb`);
  }
  const out = allocMessage(total);
  let at = 0;
  for (const { field, message, length } of results) {
    at = writeFieldHeader(out, at, ISLANDS_FIELD, length);
    at = writeFieldHeader(out, at, field, message.byteLength);
    if (message instanceof Uint8Array) {
      out.set(message, at);
      at += message.byteLength;
    } else {
      at = writeRenderResponse(out, at, message);
    }
  }
  return out;
}

/**
 * @param {string} size the message's length in bytes, or "at least" a bound
 * @param {{htmlBytes: number, headBytes: number, propsBytes: number}} parts
 * @param {string} page
 * @param {number} maxBytes
 * @returns {never}
 */
function tooLarge(size, { htmlBytes, headBytes, propsBytes }, page, maxBytes) {
  const mb = (/** @type {number} */ n) => `${(n / MiB).toFixed(1)} MB`;
  throw new PageTooLargeError(`page "${page}" is too large: its response would be ${size} bytes (HTML ${mb(htmlBytes)}, `
    + `head ${mb(headBytes)}, props_json ${mb(propsBytes)}), over the ${maxBytes / MiB} MB limit of renderer.max_page_mb`);
}

/**
 * The length of a length-delimited field's tag and length (fields below 16).
 * @param {number} length
 */
export function fieldHeaderLength(length) {
  let bytes = 2; // the tag (fields below 16 take one byte) and the first length byte
  for (let n = length; n >= 0x80; n = Math.floor(n / 0x80)) bytes++;
  return bytes;
}

/**
 * @param {Buffer} out
 * @param {number} at
 * @param {number} field
 * @param {number} length
 * @returns {number} the offset after the header
 */
export function writeFieldHeader(out, at, field, length) {
  out[at++] = (field << 3) | LENGTH_DELIMITED;
  return writeVarint(out, at, length);
}

/**
 * A varint of a non-negative integer up to 2^53.
 * @param {Uint8Array} out
 * @param {number} at
 * @param {number} value
 * @returns {number} the offset after it
 */
export function writeVarint(out, at, value) {
  let n = value;
  while (n >= 0x80) {
    out[at++] = (n % 0x80) | 0x80;
    n = Math.floor(n / 0x80);
  }
  out[at++] = n;
  return at;
}
