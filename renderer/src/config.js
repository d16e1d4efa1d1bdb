// Config: one YAML file shared with the edge (README, Configuration). The renderer owns
// only the `renderer:` section; `edge:` is the edge's to validate.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { PENDING_RENDER_GUESS_BYTES } from './pool/pending-memory.js';
import { autoOr, duration, grpcAddress, hostPort, integerAtLeast, nonEmptyString, numberBetween, oneOf, optional, otlpEndpoint } from './config-values.js';

/**
 * @typedef {object} Config
 * @property {string} grpcAddress `unix:///path` or `host:port`.
 * @property {string} httpListen `host:port`; an empty host means all interfaces.
 * @property {string} bundle Absolute path of the app's server bundle.
 * @property {number} threads Worker threads (0 in the file resolves to the cores available + 1).
 * @property {number} maxOldGenerationMb
 * @property {number} maxYoungGenerationMb
 * @property {number} stackMb
 * @property {number} maxRequestMb Largest gRPC request accepted.
 * @property {number} defaultDeadlineMs The hard timeout of a call that carries
 *   no deadline of its own (the edge's calls carry its hard_timeout as their
 *   gRPC deadline; a grpcurl call may carry none).
 * @property {number} drainTimeoutMs After SIGTERM, how long renders in flight
 *   may take before they are cut.
 * @property {string} logLevel
 * @property {number} warmupRounds times each worker renders the bundle's
 *   warm-up set before it takes traffic (0: no warm-up)
 * @property {number} maxQueue renders that may wait for a worker; beyond it
 *   RESOURCE_EXHAUSTED at once ("auto" in the file: threads x default_deadline
 *   / 25 ms, what the pool drains within the deadline at 25 ms a render)
 * @property {number} maxPendingPerWorker renders one worker holds at once, those
 *   waiting for data included; past it on every worker, RESOURCE_EXHAUSTED at once
 *   ("auto" in the file: half of max_old_generation_mb over PENDING_RENDER_GUESS_BYTES)
 * @property {number} maxRenders a worker retires after about this many
 *   renders (+-10 % jitter per worker; 0: never)
 * @property {number} recycleHeapRatio a worker retires when its V8 heap used
 *   after a render passes this share of max_old_generation_mb, its
 *   old-generation cap (not of heap_size_limit, which adds the young
 *   generation, and a leak fills the old one first) (0: never)
 * @property {number} maxExternalMb a worker retires when its external memory
 *   (Buffers, ArrayBuffers: not bounded by the heap cap) passes this (0: never)
 * @property {string} debugListen `host:port` of the debug listener
 *   (/debug/workers, heap snapshots); empty: off
 * @property {string} heapSnapshotDir where POST /debug/heap-snapshot writes;
 *   empty: snapshots off. Use a writable volume with a size limit.
 * @property {number} heapSnapshotNearLimit how many workers retiring for heap
 *   (recycle_heap_ratio: near their cap) write a snapshot into
 *   heap_snapshot_dir before they exit, over the renderer's life (0: none)
 * @property {number} maxPageMb largest render response a worker sends; a
 *   larger page fails with RENDER_ERR_PAGE_TOO_LARGE (keep equal to
 *   edge.max_page_mb, which bounds the same message)
 * @property {number} quarantineAfter renders of one request that killed their
 *   worker within quarantine_window before the request is refused at once
 *   (0: no quarantine)
 * @property {number} quarantinePageAfter distinct requests of one page that killed
 *   workers within quarantine_window before the whole page is refused at once
 *   (0: only requests are quarantined)
 * @property {number} quarantineWindowMs
 * @property {number} quarantineDurationMs how long a quarantined request is refused
 * @property {number} heapGrowthSampleEvery each worker measures exactly what
 *   one render in this many kept in its heap, for renderer_page_heap_growth_bytes
 *   (0: never)
 * @property {number} abortCpuBudgetMs CPU an aborted render's code may still take
 *   (it cannot be stopped in-band) before its worker is ended ("auto" in the file: a
 *   tenth of default_deadline, at least ABORT_CPU_BUDGET_MIN_MS)
 * @property {number} reloadTimeoutMs how long a reload's trial worker may take
 *   to load and warm up the bundle
 * @property {string} otlpEndpoint OTLP/gRPC collector for spans, `http://host:port`
 *   (`https://` for TLS); empty: tracing off
 */

export class ConfigError extends Error {
  /**
   * @param {string} key what is wrong, e.g. `renderer.threads`
   * @param {string} problem
   */
  constructor(key, problem) {
    super(`config: ${key}: ${problem}`);
    this.name = 'ConfigError';
    this.key = key;
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * @typedef {object} KeySpec
 * @property {string} field property of Config
 * @property {string | number} fallback the embedded default (runs the demo)
 * @property {(value: unknown) => string | number} check returns the value or throws a problem string
 * @property {string} [shown] the default as --help words it, when the value alone does not say
 */

/** @type {Record<string, KeySpec>} */
const KEYS = {
  grpc_address: { field: 'grpcAddress', fallback: 'unix:///tmp/sidecar-ssr/renderer.sock', check: grpcAddress },
  http_listen: { field: 'httpListen', fallback: ':9101', check: hostPort },
  bundle: { field: 'bundle', fallback: 'app/dist/server/server.js', check: nonEmptyString },
  threads: { field: 'threads', fallback: 0, shown: '0 (the cores available + 1)', check: integerAtLeast(0) },
  // Below a few MB V8 cannot even create the worker's isolate and aborts the
  // whole process (2 MB did on Node 26); 4 MB fails cleanly as a worker OOM.
  max_old_generation_mb: { field: 'maxOldGenerationMb', fallback: 128, check: integerAtLeast(4) },
  max_young_generation_mb: { field: 'maxYoungGenerationMb', fallback: 48, check: integerAtLeast(1) },
  stack_mb: { field: 'stackMb', fallback: 4, check: integerAtLeast(1) },
  max_request_mb: { field: 'maxRequestMb', fallback: 4, check: integerAtLeast(1) },
  default_deadline: { field: 'defaultDeadlineMs', fallback: '2s', check: duration },
  // Keep it below the pod's terminationGracePeriodSeconds (30 s by default).
  drain_timeout: { field: 'drainTimeoutMs', fallback: '10s', check: duration },
  log_level: { field: 'logLevel', fallback: 'info', check: oneOf(LOG_LEVELS) },
  warmup_rounds: { field: 'warmupRounds', fallback: 3, check: integerAtLeast(0) },
  max_queue: { field: 'maxQueue', fallback: 'auto', check: autoOr(integerAtLeast(0)) },
  max_pending_per_worker: { field: 'maxPendingPerWorker', fallback: 'auto', check: autoOr(integerAtLeast(1)) },
  max_renders: { field: 'maxRenders', fallback: 5000, check: integerAtLeast(0) },
  recycle_heap_ratio: { field: 'recycleHeapRatio', fallback: 0.8, check: numberBetween(0, 1) },
  max_external_mb: { field: 'maxExternalMb', fallback: 256, check: integerAtLeast(0) },
  // 127.0.0.1:9102 is the documented value (README); never a public interface:
  // it writes heap snapshots and shows every worker's memory.
  debug_listen: { field: 'debugListen', fallback: '', check: optional(hostPort) },
  heap_snapshot_dir: { field: 'heapSnapshotDir', fallback: '', check: optional(nonEmptyString) },
  heap_snapshot_near_limit: { field: 'heapSnapshotNearLimit', fallback: 0, check: integerAtLeast(0) },
  // The edge refuses a larger response (edge.max_page_mb, also 16 by
  // default); failing in the worker saves encoding and sending it.
  max_page_mb: { field: 'maxPageMb', fallback: 16, check: integerAtLeast(1) },
  quarantine_after: { field: 'quarantineAfter', fallback: 2, check: integerAtLeast(0) },
  quarantine_page_after: { field: 'quarantinePageAfter', fallback: 3, check: integerAtLeast(0) },
  quarantine_window: { field: 'quarantineWindowMs', fallback: '1m', check: duration },
  quarantine_duration: { field: 'quarantineDurationMs', fallback: '5m', check: duration },
  abort_cpu_budget: { field: 'abortCpuBudgetMs', fallback: 'auto', check: autoOr(duration) },
  // A reload (SIGHUP) whose trial worker is not warm by then fails; the
  // workers go on with the bundle they have.
  reload_timeout: { field: 'reloadTimeoutMs', fallback: '60s', check: duration },
  // Two young-generation GCs per measured render, in the worker's idle time.
  heap_growth_sample_every: { field: 'heapGrowthSampleEvery', fallback: 100, check: integerAtLeast(0) },
  // Where spans go (OTLP over gRPC); empty: no tracing, and no cost.
  otlp_endpoint: { field: 'otlpEndpoint', fallback: '', check: optional(otlpEndpoint) },
};

/**
 * The least abort_cpu_budget: auto gives. A render aborted mid-way takes a few ms of
 * React's own cleanup (the abort flushes its pending boundaries); 50 ms is a dozen
 * renders of the demo page.
 */
const ABORT_CPU_BUDGET_MIN_MS = 50;

/** Render time assumed by max_queue: auto (a warm demo render is ~4 ms). */
const AUTO_QUEUE_RENDER_MS = 25;


const SECTIONS = new Set(['edge', 'renderer']);
const ENV_PREFIX = 'SSR_RENDERER_';

/**
 * Parses and validates the config text (the whole shared file), then applies
 * `SSR_RENDERER_<KEY>` overrides from env, then the command line's flags.
 * Throws ConfigError naming the key (the flag, for a value a flag gave).
 * @param {string | undefined} text YAML; undefined or empty means embedded defaults.
 * @param {{env?: Record<string, string | undefined>, flags?: FlagSetting[], cwd?: string}} [options]
 * @returns {Config}
 */
export function parseConfig(text, { env = {}, flags = [], cwd = process.cwd() } = {}) {
  const section = rendererSection(text);

  /** @type {Record<string, unknown>} */
  const raw = {};
  for (const [key, spec] of Object.entries(KEYS)) raw[key] = spec.fallback;
  for (const [key, value] of Object.entries(section)) {
    if (!Object.hasOwn(KEYS, key)) throw new ConfigError(`renderer.${key}`, 'unknown key');
    raw[key] = value;
  }
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith(ENV_PREFIX) || value === undefined) continue;
    const key = name.slice(ENV_PREFIX.length).toLowerCase();
    if (!Object.hasOwn(KEYS, key)) throw new ConfigError(name, `names no key (renderer.${key} does not exist)`);
    raw[key] = value;
  }
  /** @type {Record<string, string>} */
  const flagOf = {};
  for (const { flag, key, value } of flags) {
    raw[key] = value;
    flagOf[key] = `--${flag}`;
  }

  /** @type {Record<string, string | number>} */
  const out = {};
  for (const [key, spec] of Object.entries(KEYS)) {
    try {
      out[spec.field] = spec.check(raw[key]);
    } catch (problem) {
      if (typeof problem !== 'string') throw problem;
      throw new ConfigError(flagOf[key] ?? `renderer.${key}`, `${problem} (got ${JSON.stringify(raw[key]) ?? String(raw[key])})`);
    }
  }
  const config = /** @type {Config} */ (/** @type {unknown} */ (out));
  config.bundle = resolve(cwd, config.bundle);
  // One more worker than cores: the edge and this process's main thread take
  // about a third of the CPU per render, and while they run a worker is waiting
  // for its next task; on 2 cores 3 workers sustained 250 req/s uncached where
  // 2 and 4 sustained 200 (bench/README.md).
  if (config.threads === 0) config.threads = availableParallelism() + 1;
  if (/** @type {unknown} */ (config.maxQueue) === 'auto') {
    config.maxQueue = Math.ceil((config.threads * config.defaultDeadlineMs) / AUTO_QUEUE_RENDER_MS);
  }
  if (/** @type {unknown} */ (config.maxPendingPerWorker) === 'auto') {
    config.maxPendingPerWorker = Math.max(1, Math.floor((config.maxOldGenerationMb * 1024 * 1024) / 2 / PENDING_RENDER_GUESS_BYTES));
  }
  // A render aborted at its deadline already had the whole of it; a tenth more of its
  // worker's thread, spent after the abort, is no render finishing its work.
  if (/** @type {unknown} */ (config.abortCpuBudgetMs) === 'auto') {
    config.abortCpuBudgetMs = Math.max(ABORT_CPU_BUDGET_MIN_MS, Math.round(config.defaultDeadlineMs / 10));
  }
  if (config.heapSnapshotDir !== '') config.heapSnapshotDir = resolve(cwd, config.heapSnapshotDir);
  if (config.heapSnapshotNearLimit > 0 && config.heapSnapshotDir === '') {
    throw new ConfigError('renderer.heap_snapshot_near_limit', 'needs renderer.heap_snapshot_dir (a writable volume with a size limit)');
  }
  if (config.heapSnapshotNearLimit > 0 && config.recycleHeapRatio === 0) {
    throw new ConfigError('renderer.heap_snapshot_near_limit', 'snapshots are taken from workers retiring for heap: needs renderer.recycle_heap_ratio > 0');
  }
  return config;
}

/**
 * The flags that set a key, beside --config, --help and --version; a bad value
 * names the flag.
 * @type {Record<string, {key: string, arg: string, help: string, value: (arg: string, cwd: string) => string}>}
 */
const FLAGS = {
  bundle: {
    key: 'bundle', arg: 'FILE', help: 'the server bundle to render (sidecar-ssr-build writes dist/server/server.js)',
    value: (arg) => arg,
  },
  socket: {
    key: 'grpc_address', arg: 'PATH', help: 'serve gRPC on this unix socket (grpc_address: unix://PATH)',
    // unix:// takes an absolute path; a relative one means from the working directory.
    value: (arg, cwd) => `unix://${arg === '' ? '' : resolve(cwd, arg)}`,
  },
  'http-listen': {
    key: 'http_listen', arg: 'HOST:PORT', help: '/healthz, /readyz and /metrics (port 0: any free port, logged)',
    value: (arg) => arg,
  },
};

/**
 * @typedef {object} FlagSetting a key given on the command line
 * @property {string} flag without its dashes, e.g. `socket`
 * @property {string} key the renderer: key it sets, e.g. `grpc_address`
 * @property {string} value
 */

/**
 * @typedef {object} CommandLine
 * @property {boolean} help
 * @property {boolean} version
 * @property {string | undefined} config the --config file
 * @property {FlagSetting[]} flags
 */

/**
 * The command line, parsed; an unknown flag or a missing value is a
 * ConfigError naming it.
 * @param {string[]} argv
 * @param {string} [cwd] what a relative --socket is relative to
 * @returns {CommandLine}
 */
export function parseCommandLine(argv, cwd = process.cwd()) {
  /** @type {Record<string, {type: 'string' | 'boolean'}>} */
  const options = { config: { type: 'string' }, help: { type: 'boolean' }, version: { type: 'boolean' } };
  for (const flag of Object.keys(FLAGS)) options[flag] = { type: 'string' };
  let values;
  try {
    ({ values } = parseArgs({ args: argv, options, strict: true }));
  } catch (err) {
    const { code, message } = /** @type {Error & {code?: string}} */ (err);
    // parseArgs's own message goes on about positional arguments.
    const unknown = code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /'([^']*)'/.exec(message)?.[1] : undefined;
    throw new ConfigError('arguments', `${unknown ? `unknown option ${unknown}` : message} (--help lists the options)`);
  }
  /** @type {(name: string) => string | undefined} */
  const string = (name) => /** @type {string | undefined} */ (values[name]);
  /** @type {FlagSetting[]} */
  const flags = [];
  for (const [flag, spec] of Object.entries(FLAGS)) {
    const arg = string(flag);
    if (arg !== undefined) flags.push({ flag, key: spec.key, value: spec.value(arg, cwd) });
  }
  return { help: values.help === true, version: values.version === true, config: string('config'), flags };
}

/**
 * Reads the file named by `--config PATH` or `SSR_CONFIG` (neither: embedded
 * defaults) and parses it with parseConfig, the command line's flags applied last.
 * @param {{argv?: string[], env?: Record<string, string | undefined>, cwd?: string}} [options]
 * @returns {Config}
 */
export function loadConfig({ argv = [], env = {}, cwd = process.cwd() } = {}) {
  const command = parseCommandLine(argv, cwd);
  const path = command.config ?? env.SSR_CONFIG;
  let text;
  if (path) {
    try {
      text = readFileSync(resolve(cwd, path), 'utf8');
    } catch (err) {
      throw new ConfigError(path, `cannot read: ${/** @type {Error} */ (err).message}`);
    }
  }
  return parseConfig(text, { env, flags: command.flags, cwd });
}

/**
 * What --help prints: the options, then every key with its default, from the
 * tables the parser uses.
 * @param {string} command how the renderer was started, e.g. `sidecar-ssr-renderer`
 * @returns {string}
 */
export function usage(command) {
  /** @type {Array<[string, string]>} */
  const options = [
    ...Object.entries(FLAGS).map(([flag, spec]) => /** @type {[string, string]} */ (
      [`--${flag} ${spec.arg}`, `${spec.help}; default ${KEYS[spec.key].fallback}`])),
    ['--config FILE', 'the shared YAML file; its renderer: section is read (also SSR_CONFIG)'],
    ['--help', 'this text'],
    ['--version', "the renderer's version"],
  ];
  const width = Math.max(...options.map(([name]) => name.length), `${ENV_PREFIX}<KEY>=VALUE`.length) + 2;
  const keyWidth = Math.max(...Object.keys(KEYS).map((key) => key.length)) + 2;
  return [
    `Usage: ${command} [options]`,
    '',
    'Renders the pages of a server bundle in worker threads for the sidecar-ssr edge,',
    'which calls it over gRPC on a unix socket.',
    '',
    'Options:',
    ...options.map(([name, help]) => `  ${name.padEnd(width)}${help}`),
    '',
    'A flag overrides the environment, which overrides the file, which overrides the defaults.',
    '',
    'Environment:',
    `  ${'SSR_CONFIG=FILE'.padEnd(width)}as --config`,
    `  ${`${ENV_PREFIX}<KEY>=VALUE`.padEnd(width)}any key below, upper-cased, e.g. ${ENV_PREFIX}THREADS=4`,
    '',
    'Keys of the renderer: section, with their defaults:',
    ...Object.entries(KEYS).map(([key, spec]) => `  ${key.padEnd(keyWidth)}${spec.shown ?? (spec.fallback === '' ? '(empty: off)' : spec.fallback)}`),
    '',
    'Example:',
    `  ${command} --bundle dist/server/server.js --socket /tmp/sidecar-ssr/renderer.sock --http-listen 127.0.0.1:9101`,
    '',
  ].join('\n');
}

/**
 * @param {string | undefined} text
 * @returns {Record<string, unknown>}
 */
function rendererSection(text) {
  if (text === undefined) return {};
  let doc;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new ConfigError('file', `invalid YAML: ${/** @type {Error} */ (err).message}`);
  }
  if (doc == null) return {};
  if (!isPlainObject(doc)) throw new ConfigError('file', 'must be a mapping with edge: and renderer: sections');
  for (const name of Object.keys(doc)) {
    if (!SECTIONS.has(name)) throw new ConfigError(name, 'unknown section (want edge: or renderer:)');
  }
  const section = doc.renderer;
  if (section == null) return {};
  if (!isPlainObject(section)) throw new ConfigError('renderer', 'must be a mapping');
  return section;
}

/**
 * @param {unknown} value
 * @returns {value is Record<string, unknown>}
 */
function isPlainObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
