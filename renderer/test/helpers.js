// Shared test plumbing: start a renderer in-process on the fixture bundle,
// with a temp-dir unix socket and port 0 for HTTP, and a real grpc-js client.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { service as healthService } from 'grpc-health-check';
import { pino } from 'pino';
import { stringify } from 'yaml';
import { parseConfig } from '../src/config.js';
import { PROTO_PATH } from '../src/threads/wire.js';
import { start } from '../src/main.js';

/** @import { Renderer } from '../src/main.js' */

/** Built from test/fixtures/server.jsx by `node app/build.mjs --fixture`. */
export const FIXTURE_BUNDLE = fileURLToPath(new URL('./fixtures/dist/server.js', import.meta.url));

/** A temp dir removed when the test ends. @param {import('node:test').TestContext} t */
export function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), 'ssr-renderer-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Log lines parsed from JSON, and a pino logger writing them. */
export function captureLogs() {
  /** @type {Array<Record<string, any>>} */
  const lines = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, logger: pino({ level: 'debug' }, stream) };
}

/**
 * Starts a renderer on the fixture bundle; closed when the test ends.
 * @param {import('node:test').TestContext} t
 * @param {Record<string, unknown>} [renderer] renderer: keys overriding the test defaults
 */
export async function startRenderer(t, renderer = {}) {
  const dir = tempDir(t);
  const config = parseConfig(stringify({
    renderer: {
      grpc_address: `unix://${join(dir, 'renderer.sock')}`,
      http_listen: '127.0.0.1:0',
      bundle: FIXTURE_BUNDLE,
      threads: 2,
      ...renderer,
    },
  }));
  const logs = captureLogs();
  /** @type {Renderer} */
  const app = await start(config, { logger: logs.logger });
  t.after(() => app.close());
  const client = renderClient(app.grpcAddress);
  t.after(() => client.close());
  return { app, client, logs: logs.lines, config };
}

/** @typedef {grpc.Client & {Render: Function}} RenderClient */

/**
 * @param {string} address
 * @returns {RenderClient}
 */
export function renderClient(address) {
  const definition = protoLoader.loadSync(PROTO_PATH, { keepCase: false, longs: Number, enums: String, defaults: true });
  const pkg = /** @type {any} */ (grpc.loadPackageDefinition(definition));
  return new pkg.ssr.v1.RenderService(address, grpc.credentials.createInsecure());
}

/**
 * @typedef {object} RenderReply
 * @property {Record<string, any>} [response]
 * @property {grpc.ServiceError} [error] with the trailers in error.metadata
 * @property {grpc.Metadata} [trailer] a successful call's trailers
 * @property {number} elapsedMs
 */

/**
 * One Render call; never rejects, so tests can look at errors and trailers.
 * @param {RenderClient} client
 * @param {Record<string, unknown>} request
 * @param {{deadlineMs?: number}} [options] no deadline when omitted
 * @returns {Promise<RenderReply>}
 */
export function render(client, request, { deadlineMs } = {}) {
  const started = performance.now();
  /** @type {grpc.CallOptions} */
  const options = deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs };
  return new Promise((resolve) => {
    /** @type {Record<string, any> | undefined} */
    let response;
    const call = client.Render({ url: '/', ...request }, options, (/** @type {grpc.ServiceError | null} */ error, /** @type {any} */ value) => {
      if (error) resolve({ error, elapsedMs: performance.now() - started });
      else response = value;
    });
    // grpc-js calls back before it emits the status, which carries the trailers.
    call.on('status', (/** @type {grpc.StatusObject} */ status) => {
      if (response) resolve({ response, trailer: status.metadata, elapsedMs: performance.now() - started });
    });
  });
}

/**
 * One RenderIslands call; never rejects.
 * @param {RenderClient} client
 * @param {Array<{name: string, propsJson?: Buffer}>} islands
 * @param {{deadlineMs?: number}} [options] no deadline when omitted
 * @returns {Promise<{response?: {islands: Array<{rendered?: Record<string, any>, error?: {code: string, message: string}}>},
 *   error?: grpc.ServiceError}>}
 */
export function renderIslands(client, islands, { deadlineMs } = {}) {
  /** @type {grpc.CallOptions} */
  const options = deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs };
  return new Promise((resolve) => {
    /** @type {any} */ (client).RenderIslands({ url: '/islands', islands }, options, (/** @type {grpc.ServiceError | null} */ error, /** @type {any} */ response) => {
      resolve(error ? { error } : { response });
    });
  });
}

/**
 * A RenderStream call as the edge makes it. `head` resolves at the head message (the
 * shell), `done` when the call ends: with the body, the trailer and the status, or the error.
 * @param {RenderClient} client
 * @param {Record<string, unknown>} request the RenderRequest
 * @param {{deadlineMs?: number, nonce?: string, prerender?: boolean, resume?: Uint8Array}} [options] the
 *   first message's other fields (RenderStreamRequest)
 */
export function renderStream(client, request, { deadlineMs, ...first } = {}) {
  /** @type {grpc.CallOptions} */
  const options = deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs };
  const call = /** @type {grpc.ClientDuplexStream<any, any>} */ (/** @type {any} */ (client).RenderStream(options));
  const head = Promise.withResolvers();
  /** @type {Buffer[]} */
  const html = [];
  /** @type {Record<string, any> | undefined} */
  let trailer;
  call.on('data', (/** @type {any} */ message) => {
    if (message.head) head.resolve(message.head);
    if (message.html) html.push(message.html);
    if (message.trailer) trailer = message.trailer;
  });
  /** @type {Promise<{html: string, trailer?: Record<string, any>, error?: grpc.ServiceError}>} */
  const done = new Promise((resolve) => {
    call.on('error', (/** @type {grpc.ServiceError} */ error) => {
      head.reject(error);
      resolve({ html: Buffer.concat(html).toString(), error });
    });
    call.on('end', () => resolve({ html: Buffer.concat(html).toString(), trailer }));
  });
  head.promise.catch(() => {});
  call.write({ render: { url: '/', ...request }, ...first });
  return {
    head: head.promise,
    done,
    /** Settles one deferred value the request named pending. @param {string} name @param {unknown} value */
    settle(name, value) {
      call.write({ settled: { name, valueJson: Buffer.from(JSON.stringify(value)) } });
    },
    end: () => call.end(),
    cancel: () => call.cancel(),
  };
}

/**
 * The renderer's /metrics, as text.
 * @param {string} httpAddress `host:port` of its HTTP listener
 */
export async function metricsText(httpAddress) {
  return (await fetch(`http://${httpAddress}/metrics`)).text();
}

/**
 * The value of one sample line, e.g. `renderer_renders_total{page="home",outcome="ok"}`
 * (undefined when absent).
 * @param {string} text exposition format
 * @param {string} sample name and labels, exactly as printed
 */
export function sample(text, sample) {
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line === undefined ? undefined : Number(line.slice(sample.length + 1));
}

/**
 * Polls until check() returns true or timeoutMs passes.
 * @param {() => boolean | Promise<boolean>} check
 * @param {number} [timeoutMs]
 */
export async function waitFor(check, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** @typedef {grpc.Client & {Check: Function, Watch: Function}} HealthClient */

/**
 * @param {string} address
 * @returns {HealthClient}
 */
export function healthClient(address) {
  const Client = grpc.makeGenericClientConstructor(/** @type {any} */ (healthService), 'grpc.health.v1.Health');
  return /** @type {any} */ (new Client(address, grpc.credentials.createInsecure()));
}

/**
 * The status string, or the gRPC error code when the call fails.
 * @param {HealthClient} client
 * @param {string} service
 * @returns {Promise<string | grpc.status>}
 */
export function check(client, service) {
  return new Promise((resolve) => {
    client.Check({ service }, { deadline: Date.now() + 2000 }, (/** @type {grpc.ServiceError | null} */ err, /** @type {any} */ res) => {
      resolve(err ? err.code : res.status);
    });
  });
}

const MAIN = fileURLToPath(new URL('../src/main.js', import.meta.url));

/**
 * Runs src/main.js (or `command`) as a child process; its JSON log lines are
 * parsed as they come.
 * @param {string[]} args
 * @param {Record<string, string>} env added to a minimal environment
 * @param {{command?: string[], cwd?: string}} [options] `command`: what runs
 *   instead of this node with src/main.js, e.g. an installed bin
 */
export function runRenderer(args, env = {}, { command = [process.execPath, MAIN], cwd } = {}) {
  const child = spawn(command[0], [...command.slice(1), ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd,
  });
  /** @type {Array<Record<string, any>>} */
  const lines = [];
  /** @type {Array<() => void>} */
  const waiters = [];
  const output = createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(JSON.parse(line));
    for (const wake of waiters.splice(0)) wake();
  });
  // Every line read, once every process holding the pipe is gone: the child, and what it
  // started with its stdout (npx's renderer outlives npm).
  const ended = once(output, 'close');
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  const exited = once(child, 'exit').then(([code, signal]) => ({ code, signal, stderr }));
  /** @param {(line: Record<string, any>) => boolean} match */
  const waitForLine = async (match) => {
    for (;;) {
      const found = lines.find(match);
      if (found) return found;
      const exit = await Promise.race([new Promise((resolve) => waiters.push(() => resolve(null))), exited]);
      if (exit) throw new Error(`exited ${JSON.stringify(exit)} before the line; stdout: ${JSON.stringify(lines)}`);
    }
  };
  return { child, lines, waitForLine, exited, ended };
}
