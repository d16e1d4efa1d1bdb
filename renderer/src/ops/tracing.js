// Traces with OpenTelemetry, off unless renderer.otlp_endpoint is set. A Render
// call continues the edge's trace (W3C traceparent in the gRPC metadata). The
// main thread records every span: the queue wait, and the worker's own spans
// (load, render) from the clock readings every render returns anyway, so a
// worker carries no SDK and a render pays nothing for being traced.
import { DiagLogLevel, ROOT_CONTEXT, SpanKind, SpanStatusCode, diag, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TracerProvider } from '@opentelemetry/sdk-trace';

/** @import { Metadata } from '@grpc/grpc-js' */
/** @import { Logger } from 'pino' */
/** @import { Span, TextMapGetter, Tracer } from '@opentelemetry/api' */
/** @import { RenderError } from '../errors.js' */
/** @import { RenderTiming } from '../worker/worker.js' */

/** The service name on the renderer's spans. */
const SERVICE_NAME = 'sidecar-ssr-renderer';

/** The span of a Render call; the edge's client span has the same name. */
const RENDER_SPAN = 'ssr.v1.RenderService/Render';

/**
 * How long one export may take: at shutdown the last one must fit in the
 * pod's grace period even when the collector is gone.
 */
const EXPORT_TIMEOUT_MS = 2000;

const propagator = new W3CTraceContextPropagator();

/** @type {TextMapGetter<Metadata>} */
const metadataGetter = {
  keys: (metadata) => Object.keys(metadata.getMap()),
  get: (metadata, key) => {
    const values = metadata.get(key);
    return values.length === 0 ? undefined : values.map(String);
  },
};

export class Tracing {
  #provider;
  /** @type {Tracer} */
  #tracer;

  /**
   * @param {string} endpoint `http://host:port` (plaintext) or `https://host:port`
   * @param {Logger} logger where a collector that cannot be reached is told
   */
  constructor(endpoint, logger) {
    // The SDK reports failed exports through its diagnostics, silent by default.
    diag.setLogger({
      error: (message, ...args) => logger.warn({ endpoint, detail: args.map(String) }, `tracing: ${message}`),
      warn: (message, ...args) => logger.warn({ endpoint, detail: args.map(String) }, `tracing: ${message}`),
      info: () => {}, debug: () => {}, verbose: () => {},
    }, DiagLogLevel.WARN);
    const exporter = new OTLPTraceExporter({ url: endpoint, timeoutMillis: EXPORT_TIMEOUT_MS });
    this.#provider = new TracerProvider({
      resource: resourceFromAttributes({ 'service.name': SERVICE_NAME }),
      // The edge decides which traces are kept; a call without a parent
      // (grpcurl, a test) is traced.
      sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
      spanProcessors: [new BatchSpanProcessor({ exporter, exportTimeoutMillis: EXPORT_TIMEOUT_MS })],
    });
    this.#tracer = this.#provider.getTracer('sidecar-ssr');
  }

  /**
   * Opens the server span of one Render call, under the caller's span when the
   * metadata carries one.
   * @param {Metadata} metadata
   * @param {{page: string, requestId: string, arrivedAt: number}} call
   * @returns {CallSpan}
   */
  call(metadata, { page, requestId, arrivedAt }) {
    const parent = propagator.extract(ROOT_CONTEXT, metadata, metadataGetter);
    const span = this.#tracer.startSpan(RENDER_SPAN, {
      kind: SpanKind.SERVER,
      startTime: arrivedAt,
      attributes: {
        'rpc.system': 'grpc', 'rpc.service': 'ssr.v1.RenderService', 'rpc.method': 'Render',
        'ssr.page': page, ...(requestId === '' ? {} : { 'ssr.request_id': requestId }),
      },
    }, parent);
    return new CallSpan(this.#tracer, span, arrivedAt);
  }

  /** Sends the spans still buffered, then stops. */
  shutdown() {
    return this.#provider.shutdown();
  }
}

/** One Render call's spans, ended by rendered() or failed(). */
class CallSpan {
  #tracer;
  #span;
  #arrivedAt;

  /**
   * @param {Tracer} tracer
   * @param {Span} span
   * @param {number} arrivedAt epoch ms
   */
  constructor(tracer, span, arrivedAt) {
    this.#tracer = tracer;
    this.#span = span;
    this.#arrivedAt = arrivedAt;
  }

  /**
   * @param {RenderTiming} timing
   * @param {string} pageRendered the page the worker rendered (the not-found
   *   page after load() said notFound)
   */
  rendered(timing, pageRendered) {
    // The edge did not sample the trace: the child spans would not be kept either.
    if (!this.#span.isRecording()) {
      this.#span.end();
      return;
    }
    const worker = this.#worker(timing.startedAt, {
      'ssr.worker.id': timing.workerId,
      'ssr.worker.heap_used_bytes': timing.heapUsedBytes,
      'ssr.page': pageRendered,
    });
    const workerContext = trace.setSpan(ROOT_CONTEXT, worker);
    this.#tracer.startSpan('load', { startTime: timing.loadAt }, workerContext).end(timing.loadAt + timing.loadUs / 1000);
    if (timing.renderAt !== undefined) {
      this.#tracer.startSpan('render', { startTime: timing.renderAt }, workerContext).end(timing.renderAt + timing.renderUs / 1000);
    }
    worker.end(timing.startedAt + timing.workerUs / 1000);
    this.#span.end();
  }

  /** @param {RenderError} error */
  failed(error) {
    if (!this.#span.isRecording()) {
      this.#span.end();
      return;
    }
    const status = { code: SpanStatusCode.ERROR, message: error.message };
    if (error.startedAt !== undefined) {
      const worker = this.#worker(error.startedAt, {});
      worker.setStatus(status);
      worker.end();
    }
    this.#span.setAttribute('ssr.error', error.code);
    this.#span.setStatus(status);
    this.#span.end();
  }

  /**
   * The queue wait, and the worker's span that follows it.
   * @param {number} startedAt epoch ms a worker picked the task up
   * @param {Record<string, string | number>} attributes
   */
  #worker(startedAt, attributes) {
    const callContext = trace.setSpan(ROOT_CONTEXT, this.#span);
    this.#tracer.startSpan('queue', { startTime: this.#arrivedAt }, callContext).end(startedAt);
    return this.#tracer.startSpan('worker render', { startTime: startedAt, attributes }, callContext);
  }
}
