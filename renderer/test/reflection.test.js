// Server reflection, so `grpcurl -plaintext unix:///path list` (and describe)
// work: it lists the render service, grpc.health.v1.Health and the reflection
// services themselves, and resolves their descriptors.
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import descriptor from 'protobufjs/ext/descriptor/index.js';
import { withMapEntryNames } from '../src/serve/reflection.js';
import { startRenderer } from './helpers.js';

const REFLECTION_PROTO = fileURLToPath(new URL('../proto/grpc/reflection/v1/reflection.proto', import.meta.resolve('@grpc/reflection')));

/**
 * One request on a ServerReflectionInfo stream, as grpcurl sends them.
 * @param {string} address
 * @param {Record<string, unknown>} request
 * @returns {Promise<Record<string, any>>}
 */
function reflect(address, request) {
  const definition = protoLoader.loadSync(REFLECTION_PROTO, { keepCase: true, oneofs: true });
  const pkg = /** @type {any} */ (grpc.loadPackageDefinition(definition));
  const client = new pkg.grpc.reflection.v1.ServerReflection(address, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) => {
    const stream = client.ServerReflectionInfo({ deadline: Date.now() + 5000 });
    stream.once('data', (/** @type {Record<string, any>} */ response) => {
      stream.end();
      client.close();
      resolve(response);
    });
    stream.once('error', reject);
    stream.write(request);
  });
}

test('reflection lists the render, health and reflection services', async (t) => {
  const { app } = await startRenderer(t, { threads: 1 });
  const listed = await reflect(app.grpcAddress, { list_services: '*' });
  const names = listed.list_services_response.service.map((/** @type {{name: string}} */ s) => s.name).sort();
  assert.deepEqual(names, [
    'grpc.health.v1.Health',
    'grpc.reflection.v1.ServerReflection',
    'grpc.reflection.v1alpha.ServerReflection',
    'ssr.v1.RenderService',
  ]);
});

test('reflection resolves a service to its file, with the .proto field names', async (t) => {
  const { app } = await startRenderer(t, { threads: 1 });
  for (const symbol of ['ssr.v1.RenderService', 'grpc.health.v1.Health']) {
    const found = await reflect(app.grpcAddress, { file_containing_symbol: symbol });
    assert.equal(found.error_response, undefined, `${symbol}: ${JSON.stringify(found.error_response)}`);
    assert.ok(found.file_descriptor_response.file_descriptor_proto.length >= 1, symbol);
  }
  const found = await reflect(app.grpcAddress, { file_containing_symbol: 'ssr.v1.RenderRequest' });
  const file = /** @type {any} */ (descriptor.FileDescriptorProto.decode(found.file_descriptor_response.file_descriptor_proto[0]));
  const request = file.messageType.find((/** @type {{name: string}} */ m) => m.name === 'RenderRequest');
  const field = (/** @type {string} */ name) => request.field.find((/** @type {{name: string}} */ f) => f.name === name);
  // Field names as written in the .proto, not proto-loader's camelCase.
  assert.ok(field('props_json'));
  // Map entries named as protoc names them, or Go clients such as grpcurl
  // reject the file ("invalid map: incorrect implicit map entry name").
  assert.deepEqual(request.nestedType.map((/** @type {{name: string}} */ n) => n.name).sort(), ['ParamsEntry', 'VariantsEntry']);
  assert.equal(field('params').typeName, '.ssr.v1.RenderRequest.ParamsEntry');
  assert.equal(field('variants').typeName, '.ssr.v1.RenderRequest.VariantsEntry');
});

test('map entry names: foo_bar -> FooBarEntry, nested messages too', () => {
  const fileBytes = descriptor.FileDescriptorProto.encode({
    name: 'x.proto',
    package: 'x.v1',
    messageType: [{
      name: 'Outer',
      field: [{ name: 'foo_bar', number: 1, label: 3, type: 11, typeName: 'Foo_bar' }],
      nestedType: [
        { name: 'Foo_bar', field: [{ name: 'key', number: 1 }, { name: 'value', number: 2 }], options: { mapEntry: true } },
        {
          name: 'Inner',
          field: [{ name: 'labels', number: 1, label: 3, type: 11, typeName: 'Labels' }],
          nestedType: [{ name: 'Labels', options: { mapEntry: true } }],
        },
      ],
    }],
  }).finish();
  const fixed = withMapEntryNames({ 'x.v1.Outer': /** @type {any} */ ({ format: 'Protocol Buffer 3 DescriptorProto', type: {}, fileDescriptorProtos: [fileBytes] }) });
  const file = /** @type {any} */ (descriptor.FileDescriptorProto.decode(/** @type {any} */ (fixed['x.v1.Outer']).fileDescriptorProtos[0]));
  const outer = file.messageType[0];
  assert.equal(outer.nestedType[0].name, 'FooBarEntry');
  assert.equal(outer.field[0].typeName, '.x.v1.Outer.FooBarEntry');
  assert.equal(outer.nestedType[1].nestedType[0].name, 'LabelsEntry');
  assert.equal(outer.nestedType[1].field[0].typeName, '.x.v1.Outer.Inner.LabelsEntry');
});
