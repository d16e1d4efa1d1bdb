// An OTLP/gRPC trace receiver that accepts every export and keeps nothing: what the traced
// bench contender sends its spans to. A real collector runs on another machine; this one
// costs the bench host a little CPU, outside the edge's and the renderer's own figures.
//   node bench/otlp-sink.mjs --port 14317
// Prints the exports and bytes received when it stops (SIGTERM).
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';

// The renderer's own grpc-js (its pinned packages), as bench/node-baseline takes its own.
const grpc = /** @type {typeof import('@grpc/grpc-js')} */ (createRequire(new URL('../renderer/package.json', import.meta.url))('@grpc/grpc-js'));

const { values } = parseArgs({ options: { port: { type: 'string', default: '14317' } } });
let exports = 0;
let bytes = 0;
const server = new grpc.Server();
// No .proto needed: the request stays bytes, and an empty message is a valid response.
/** @type {grpc.ServiceDefinition} */
const traceService = {
  Export: {
    path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
    requestStream: false,
    responseStream: false,
    requestSerialize: (/** @type {Buffer} */ b) => b,
    requestDeserialize: (b) => b,
    responseSerialize: () => Buffer.alloc(0),
    responseDeserialize: (b) => b,
  },
};
server.addService(traceService, {
  Export: (/** @type {grpc.ServerUnaryCall<Buffer, Buffer>} */ call, /** @type {grpc.sendUnaryData<Buffer>} */ callback) => {
    exports++;
    bytes += call.request.length;
    callback(null, Buffer.alloc(0));
  },
});
server.bindAsync(`127.0.0.1:${values.port}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) throw err;
  console.log(JSON.stringify({ msg: 'listening', port: Number(values.port) }));
});
process.once('SIGTERM', () => {
  console.log(JSON.stringify({ msg: 'stopped', exports, bytes }));
  server.forceShutdown();
});
