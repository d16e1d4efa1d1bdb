// Traces with OpenTelemetry, off unless renderer.otlp_endpoint is set. A call
// (Render, RenderStream, RenderIslands) continues the edge's trace (W3C
// traceparent in the gRPC metadata). The main thread records every span: the
// queue wait, and the worker's own spans (load, render) from the clock readings
// every render returns anyway, so a worker carries no SDK and a render pays
// nothing for being traced.
import { DiagLogLevel, ROOT_CONTEXT, SpanKind, SpanStatusCode, diag, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TracerProvider } from '@opentelemetry/sdk-trace';

/** @import { Metadata } from '@grpc/grpc-js' */
/** @import { Logger } from 'pino' */
/** @import { Span, TextMapGetter, Tracer } from '@opentelemetry/api' */
/** @import { RenderError } from '../errors.js' */
/** @import { RenderTiming } from '../threads/messages.js' */

/** The service name on the renderer's spans. */
const SERVICE_NAME = 'sidecar-ssr-renderer';

/** A call's span is named `${SERVICE}/${method}`, as the edge's client span is. */
const SERVICE = 'ssr.v1.RenderService';

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
   * Opens the server span of one call, under the caller's span when the
   * metadata carries one.
   * @param {Metadata} metadata
   * @param {{method?: string, attributes: Record<string, string | number>, requestId: string, arrivedAt: number}} call
   *   `method`: Render unless said (RenderStream's span is Render's)
   * @returns {CallSpan}
   */
  call(metadata, { method = 'Render', attributes, requestId, arrivedAt }) {
    const parent = propagator.extract(ROOT_CONTEXT, metadata, metadataGetter);
    const span = this.#tracer.startSpan(`${SERVICE}/${method}`, {
      kind: SpanKind.SERVER,
      startTime: arrivedAt,
      attributes: {
        'rpc.system': 'grpc', 'rpc.service': SERVICE, 'rpc.method': method,
        ...attributes, ...(requestId === '' ? {} : { 'ssr.request_id': requestId }),
      },
    }, parent);
    return new CallSpan(this.#tracer, span, arrivedAt);
  }

  /** Sends the spans still buffered, then stops. */
  shutdown() {
    return this.#provider.shutdown();
  }
}

/**
 * One call's spans, ended by rendered() or failed(); or, for a call of several renders
 * (RenderIslands), each render's under it (child()), and the call's by end().
 */
export class CallSpan {
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
    if (this.#span.isRecording() && error.startedAt !== undefined) {
      const worker = this.#worker(error.startedAt, {});
      worker.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
      worker.end();
    }
    this.end(error);
  }

  /**
   * A span under this one for one of the call's renders, ended as a call's is.
   * @param {string} name
   * @param {Record<string, string>} attributes
   */
  child(name, attributes) {
    const span = this.#tracer.startSpan(name, { startTime: this.#arrivedAt, attributes }, trace.setSpan(ROOT_CONTEXT, this.#span));
    return new CallSpan(this.#tracer, span, this.#arrivedAt);
  }

  /** @param {RenderError} [error] why the call failed, when it did */
  end(error) {
    if (error) {
      this.#span.setAttribute('ssr.error', error.code);
      this.#span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    }
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
