// The .proto's location, and a RenderResponse encoded inside the worker.
//
// Encoding where the HTML string is born, straight into one buffer that is
// then transferred, means the renderer's main thread hands grpc-js finished
// bytes: it allocates no per-request copy of the page of its own (grpc-js
// still makes one when it frames the message). Every such copy there is
// ArrayBuffer memory that V8 counts towards its next full GC of the main
// thread, and those GCs, run on V8's helper threads, were the largest cost of
// the hop (bench/README.md).
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

export const PROTO_ROOT = fileURLToPath(new URL('../../proto/', import.meta.url));
export const RENDER_PROTO = 'ssr/v1/render.proto';
export const PROTO_PATH = join(PROTO_ROOT, RENDER_PROTO);

/** Field numbers of the two large fields in render.proto's RenderResponse. */
const HTML_FIELD = 1;
const PROPS_JSON_FIELD = 6;
const LENGTH_DELIMITED = 2;

/**
 * Everything in a RenderResponse except its two large fields, in
 * proto-loader's camelCase names; uint64s as numbers.
 * @typedef {object} ResponseFields
 * @property {string} head
 * @property {number} status
 * @property {Array<{name: string, value: string}>} headers
 * @property {{maxAgeSeconds: number, noStore: boolean}} cache
 * @property {string} page
 * @property {{queueUs: number, loadUs: number, renderUs: number, workerId: number,
 *   heapUsedBytes: number, heapLimitBytes: number, externalBytes: number}} timing
 */

/** @type {protobuf.Type | undefined} */
let responseType;

/**
 * The wire bytes of a RenderResponse, in a buffer of their own (transferable).
 * html and propsJson are written as UTF-8 straight into it; the small fields
 * follow, encoded by protobufjs (a message may list its fields in any order).
 * @param {string} html
 * @param {string} propsJson
 * @param {ResponseFields} fields
 * @returns {Buffer}
 */
export function encodeRenderResponse(html, propsJson, fields) {
  responseType ??= protobuf.loadSync(PROTO_PATH).lookupType('ssr.v1.RenderResponse');
  const rest = responseType.encode(fields).finish();
  const htmlBytes = Buffer.byteLength(html, 'utf8');
  const propsBytes = Buffer.byteLength(propsJson, 'utf8');
  const out = Buffer.allocUnsafeSlow(
    fieldHeaderLength(htmlBytes) + htmlBytes + fieldHeaderLength(propsBytes) + propsBytes + rest.length,
  );
  let at = writeFieldHeader(out, 0, HTML_FIELD, htmlBytes);
  at += out.write(html, at, 'utf8');
  at = writeFieldHeader(out, at, PROPS_JSON_FIELD, propsBytes);
  at += out.write(propsJson, at, 'utf8');
  out.set(rest, at);
  return out;
}

/** @param {number} length */
function fieldHeaderLength(length) {
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
function writeFieldHeader(out, at, field, length) {
  out[at++] = (field << 3) | LENGTH_DELIMITED;
  let n = length;
  while (n >= 0x80) {
    out[at++] = (n % 0x80) | 0x80;
    n = Math.floor(n / 0x80);
  }
  out[at++] = n;
  return at;
}
