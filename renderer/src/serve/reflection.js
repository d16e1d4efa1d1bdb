// gRPC server reflection (so `grpcurl -plaintext unix:///path list` and
// `describe` work): every service this server registers, including health and
// reflection itself, as grpc-go lists them.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as protoLoader from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { protoPath as HEALTH_PROTO_PATH } from 'grpc-health-check';
import descriptor from 'protobufjs/ext/descriptor/index.js';

/** @import { Server } from '@grpc/grpc-js' */

/**
 * The parts of a decoded google.protobuf.DescriptorProto used here.
 * @typedef {{name: string, field: Array<{name: string, typeName?: string}>,
 *   nestedType: DescriptorProto[], options?: {mapEntry?: boolean}}} DescriptorProto
 */

/**
 * Registers grpc.reflection.v1 and v1alpha on the server, describing the
 * .proto files under protoRoot named in `files` plus health and reflection.
 * @param {Server} server
 * @param {{protoRoot: string, files: string[]}} protos
 */
export function addReflection(server, { protoRoot, files }) {
  const reflectionRoot = fileURLToPath(new URL('../proto/', import.meta.resolve('@grpc/reflection')));
  const healthRoot = join(dirname(HEALTH_PROTO_PATH), '../..');
  // keepCase: the descriptors carry the .proto's field names, not camelCase.
  // proto-loader merges files by package, so reflection names them
  // `ssr_v1.proto`, `grpc_health_v1.proto`...
  const definition = protoLoader.loadSync([
    ...files,
    'health/v1/health.proto',
    'grpc/reflection/v1/reflection.proto',
    'grpc/reflection/v1alpha/reflection.proto',
  ], { keepCase: true, includeDirs: [protoRoot, healthRoot, reflectionRoot] });
  new ReflectionService(withMapEntryNames(definition)).addToServer(server);
}

/**
 * protobufjs names a map field's entry message after the field ("Params")
 * where protoc says "ParamsEntry"; Go clients (grpcurl) then reject the whole
 * file: "is an invalid map: incorrect implicit map entry name"
 * (fullstorydev/grpcurl#519). Rename the entries and point their fields at
 * them by full name.
 * @param {protoLoader.PackageDefinition} definition
 * @returns {protoLoader.PackageDefinition}
 */
export function withMapEntryNames(definition) {
  /** @type {Map<Buffer | Uint8Array, Uint8Array>} */
  const fixed = new Map();
  const fix = (/** @type {Buffer | Uint8Array} */ bytes) => {
    let out = fixed.get(bytes);
    if (!out) {
      const file = /** @type {any} */ (descriptor.FileDescriptorProto.decode(bytes));
      const scope = file.package ? `.${file.package}` : '';
      for (const message of file.messageType) renameMapEntries(message, scope);
      out = descriptor.FileDescriptorProto.encode(file).finish();
      fixed.set(bytes, out);
    }
    return out;
  };
  /** @type {protoLoader.PackageDefinition} */
  const out = {};
  for (const [name, value] of Object.entries(definition)) {
    const protos = /** @type {{fileDescriptorProtos?: Array<Buffer | Uint8Array>}} */ (value).fileDescriptorProtos;
    out[name] = Array.isArray(protos) ? /** @type {any} */ ({ ...value, fileDescriptorProtos: protos.map(fix) }) : value;
  }
  return out;
}

/**
 * @param {DescriptorProto} message
 * @param {string} scope full name of its parent, with the leading dot
 */
function renameMapEntries(message, scope) {
  const fullName = `${scope}.${message.name}`;
  for (const nested of message.nestedType) {
    if (!nested.options?.mapEntry) {
      renameMapEntries(nested, fullName);
      continue;
    }
    const field = message.field.find((f) => f.typeName === nested.name || f.typeName === `${fullName}.${nested.name}`);
    if (!field) continue;
    nested.name = mapEntryName(field.name);
    field.typeName = `${fullName}.${nested.name}`;
  }
}

/**
 * protoc's entry name for a map field: `foo_bar` -> `FooBarEntry`.
 * @param {string} field
 */
function mapEntryName(field) {
  return `${field.replace(/(?:^|_)(.)/g, (_, c) => c.toUpperCase())}Entry`;
}
