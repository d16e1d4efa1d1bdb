import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { ConfigError, loadConfig, parseCommandLine, parseConfig, usage } from '../src/config.js';
import { tempDir } from './helpers.js';

test('no file: the embedded defaults that run the demo', () => {
  const config = parseConfig(undefined, { env: {}, cwd: '/srv/ssr' });
  assert.deepEqual(config, {
    grpcAddress: 'unix:///tmp/sidecar-ssr/renderer.sock',
    httpListen: ':9101',
    bundle: '/srv/ssr/app/dist/server/server.js',
    threads: availableParallelism() + 1,
    maxOldGenerationMb: 128,
    maxYoungGenerationMb: 48,
    stackMb: 4,
    maxRequestMb: 4,
    defaultDeadlineMs: 2000,
    drainTimeoutMs: 10_000,
    logLevel: 'info',
    warmupRounds: 3,
    maxQueue: Math.ceil(((availableParallelism() + 1) * 2000) / 25),
    maxPendingPerWorker: 256,
    maxRenders: 5000,
    recycleHeapRatio: 0.8,
    maxExternalMb: 256,
    debugListen: '',
    heapSnapshotDir: '',
    heapSnapshotNearLimit: 0,
    maxPageMb: 16,
    quarantineAfter: 2,
    quarantinePageAfter: 3,
    quarantineWindowMs: 60_000,
    quarantineDurationMs: 300_000,
    abortCpuBudgetMs: 200,
    heapGrowthSampleEvery: 100,
    reloadTimeoutMs: 60_000,
    otlpEndpoint: '',
  });
});

test('the defaults both processes read agree with the edge\'s embedded defaults', () => {
  const edgeDefaults = parseYaml(readFileSync(new URL('../../edge/internal/config/defaults.yaml', import.meta.url), 'utf8'));
  const config = parseConfig(undefined, { env: {} });
  assert.equal(config.grpcAddress, edgeDefaults.renderer.grpc_address, 'renderer.grpc_address: where one listens, the other dials');
  assert.equal(config.maxPageMb, edgeDefaults.edge.max_page_mb, 'renderer.max_page_mb = edge.max_page_mb: the worker refuses what the edge would');
});

test('page size cap and quarantine keys', () => {
  const config = parseConfig(`
renderer:
  max_page_mb: 4
  quarantine_after: 3
  quarantine_window: 30s
  quarantine_duration: 10m
`, { env: {} });
  assert.equal(config.maxPageMb, 4);
  assert.equal(config.quarantineAfter, 3);
  assert.equal(config.quarantineWindowMs, 30_000);
  assert.equal(config.quarantineDurationMs, 600_000);
  assert.equal(parseConfig('renderer: {quarantine_after: 0}', {}).quarantineAfter, 0, '0 turns quarantine off');
  const env = parseConfig('', {
    env: { SSR_RENDERER_QUARANTINE_AFTER: '5', SSR_RENDERER_QUARANTINE_WINDOW: '2m', SSR_RENDERER_QUARANTINE_DURATION: '90s', SSR_RENDERER_MAX_PAGE_MB: '8' },
  });
  assert.deepEqual([env.quarantineAfter, env.quarantineWindowMs, env.quarantineDurationMs, env.maxPageMb], [5, 120_000, 90_000, 8]);
  assert.throws(() => parseConfig('renderer: {max_page_mb: 0}', {}), { message: 'config: renderer.max_page_mb: must be an integer >= 1 (got 0)' });
  assert.throws(() => parseConfig('renderer: {quarantine_after: -1}', {}), { key: 'renderer.quarantine_after' });
  assert.throws(() => parseConfig('renderer: {quarantine_window: 1}', {}), { key: 'renderer.quarantine_window', message: /must be a duration/ });
  assert.throws(() => parseConfig('renderer: {quarantine_duration: forever}', {}), { key: 'renderer.quarantine_duration', message: /must be a duration/ });
});

test('issue 5 keys: warm-up, queue bound, recycling, debug listener', () => {
  const config = parseConfig(`
renderer:
  threads: 2
  default_deadline: 1s
  warmup_rounds: 0
  max_queue: 7
  max_renders: 0
  recycle_heap_ratio: 0.5
  max_external_mb: 64
  debug_listen: "127.0.0.1:9102"
  heap_snapshot_dir: snaps
`, { env: {}, cwd: '/x' });
  assert.equal(config.warmupRounds, 0);
  assert.equal(config.maxQueue, 7);
  assert.equal(config.maxRenders, 0);
  assert.equal(config.recycleHeapRatio, 0.5);
  assert.equal(config.maxExternalMb, 64);
  assert.equal(config.debugListen, '127.0.0.1:9102');
  assert.equal(config.heapSnapshotDir, '/x/snaps');
  // auto: threads x default_deadline / 25 ms
  assert.equal(parseConfig('renderer: {threads: 2, default_deadline: 1s}', {}).maxQueue, 80);
  assert.equal(parseConfig('', { env: { SSR_RENDERER_RECYCLE_HEAP_RATIO: '0.7', SSR_RENDERER_MAX_QUEUE: 'auto', SSR_RENDERER_THREADS: '1' } }).recycleHeapRatio, 0.7);
  assert.throws(() => parseConfig('renderer: {recycle_heap_ratio: 1.5}', {}), { key: 'renderer.recycle_heap_ratio' });
  assert.throws(() => parseConfig('renderer: {max_queue: lots}', {}), { key: 'renderer.max_queue', message: /must be auto or an integer >= 0/ });
  assert.equal(parseConfig('renderer: {max_old_generation_mb: 64}', { env: {} }).maxPendingPerWorker, 128, 'auto follows the heap cap');
  assert.throws(() => parseConfig('renderer: {max_pending_per_worker: 0}', {}), { key: 'renderer.max_pending_per_worker', message: /must be auto or an integer >= 1/ });
  // auto: a tenth of default_deadline, at least 50 ms
  assert.equal(parseConfig('renderer: {default_deadline: 5s}', { env: {} }).abortCpuBudgetMs, 500);
  assert.equal(parseConfig('renderer: {default_deadline: 300ms}', { env: {} }).abortCpuBudgetMs, 50);
  assert.equal(parseConfig('renderer: {abort_cpu_budget: 80ms}', { env: {} }).abortCpuBudgetMs, 80);
  assert.throws(() => parseConfig('renderer: {abort_cpu_budget: 0}', {}), { key: 'renderer.abort_cpu_budget', message: /must be auto or a duration/ });
  assert.throws(() => parseConfig('renderer: {debug_listen: "nope"}', {}), { key: 'renderer.debug_listen' });
  assert.equal(parseConfig('', {}).otlpEndpoint, '');
  assert.equal(parseConfig('', { env: { SSR_RENDERER_OTLP_ENDPOINT: 'http://[::1]:4317' } }).otlpEndpoint, 'http://[::1]:4317');
  // The edge's check runs the same cases (edge/internal/config/config_test.go).
  const endpoints = JSON.parse(readFileSync(new URL('../../edge/internal/config/testdata/otlp_endpoints.json', import.meta.url), 'utf8'));
  for (const good of endpoints.valid) {
    assert.equal(parseConfig('', { env: { SSR_RENDERER_OTLP_ENDPOINT: good } }).otlpEndpoint, good, good);
  }
  for (const bad of endpoints.invalid) {
    assert.throws(() => parseConfig('', { env: { SSR_RENDERER_OTLP_ENDPOINT: bad } }), { key: 'renderer.otlp_endpoint', message: /with a port/ }, bad);
  }
  assert.throws(() => parseConfig('renderer: {heap_snapshot_near_limit: 1}', {}), {
    key: 'renderer.heap_snapshot_near_limit', message: /needs renderer\.heap_snapshot_dir/,
  });
});

test('the renderer: section of the shared file; edge: is left to the edge', () => {
  const config = parseConfig(`
edge:
  listen: ":8080"
  routes: [{pattern: "GET /{$}", page: home}]
renderer:
  grpc_address: "127.0.0.1:0"
  http_listen: "[::1]:0"
  bundle: dist/server.js
  threads: 3
  max_old_generation_mb: 64
  max_young_generation_mb: 12
  stack_mb: 2
  max_request_mb: 8
  default_deadline: 1m30s
  drain_timeout: 25s
  log_level: debug
`, { env: {}, cwd: '/x' });
  assert.equal(config.grpcAddress, '127.0.0.1:0');
  assert.equal(config.httpListen, '[::1]:0');
  assert.equal(config.bundle, '/x/dist/server.js');
  assert.equal(config.threads, 3);
  assert.equal(config.maxOldGenerationMb, 64);
  assert.equal(config.maxYoungGenerationMb, 12);
  assert.equal(config.stackMb, 2);
  assert.equal(config.maxRequestMb, 8);
  assert.equal(config.defaultDeadlineMs, 90_000);
  assert.equal(config.drainTimeoutMs, 25_000);
  assert.equal(config.logLevel, 'debug');
});

test('an empty file, or empty sections, mean defaults', () => {
  assert.equal(parseConfig('', {}).maxOldGenerationMb, 128);
  assert.equal(parseConfig('edge:\nrenderer:\n', {}).maxOldGenerationMb, 128);
});

test('durations: ms, s, m and combinations', () => {
  for (const [text, ms] of /** @type {const} */ ([['500ms', 500], ['2s', 2000], ['1.5s', 1500], ['1m', 60_000], ['1m30s', 90_000]])) {
    assert.equal(parseConfig(`renderer: {default_deadline: "${text}"}`, {}).defaultDeadlineMs, ms, text);
  }
});

test('SSR_RENDERER_<KEY> overrides the file for every scalar key', () => {
  const config = parseConfig('renderer: {threads: 3, log_level: warn}', {
    env: {
      SSR_RENDERER_THREADS: '2',
      SSR_RENDERER_DEFAULT_DEADLINE: '250ms',
      SSR_RENDERER_GRPC_ADDRESS: 'unix:///run/ssr/renderer.sock',
      SSR_RENDERER_MAX_OLD_GENERATION_MB: '96',
      SSR_EDGE_LISTEN: ':1', // the edge's: not ours to judge
      PATH: '/usr/bin',
    },
  });
  assert.equal(config.threads, 2);
  assert.equal(config.defaultDeadlineMs, 250);
  assert.equal(config.grpcAddress, 'unix:///run/ssr/renderer.sock');
  assert.equal(config.maxOldGenerationMb, 96);
  assert.equal(config.logLevel, 'warn');
});

test('errors name the key', async (t) => {
  const cases = [
    { name: 'unknown key', text: 'renderer: {treads: 2}', env: {}, message: 'config: renderer.treads: unknown key' },
    { name: 'unknown section', text: 'rendrer: {threads: 2}', env: {}, message: /^config: rendrer: unknown section/ },
    { name: 'unknown env var', text: '', env: { SSR_RENDERER_TREADS: '2' }, message: /^config: SSR_RENDERER_TREADS: names no key/ },
    { name: 'threads not a number (env)', text: '', env: { SSR_RENDERER_THREADS: 'x' }, message: 'config: renderer.threads: must be an integer >= 0 (got "x")' },
    { name: 'threads negative', text: 'renderer: {threads: -1}', env: {}, message: 'config: renderer.threads: must be an integer >= 0 (got -1)' },
    { name: 'fractional heap', text: 'renderer: {max_old_generation_mb: 16.5}', env: {}, message: /^config: renderer.max_old_generation_mb: must be an integer >= 4/ },
    { name: 'heap too small to create a worker', text: 'renderer: {max_old_generation_mb: 2}', env: {}, message: 'config: renderer.max_old_generation_mb: must be an integer >= 4 (got 2)' },
    { name: 'zero young generation', text: 'renderer: {max_young_generation_mb: 0}', env: {}, message: /^config: renderer.max_young_generation_mb: / },
    { name: 'null value', text: 'renderer: {stack_mb: }', env: {}, message: 'config: renderer.stack_mb: must be an integer >= 1 (got null)' },
    { name: 'bad duration', text: 'renderer: {default_deadline: 2}', env: {}, message: /^config: renderer.default_deadline: must be a duration/ },
    { name: 'duration with hours', text: 'renderer: {default_deadline: 1h}', env: {}, message: /^config: renderer.default_deadline: / },
    { name: 'zero duration', text: 'renderer: {default_deadline: 0s}', env: {}, message: /^config: renderer.default_deadline: / },
    { name: 'bad drain timeout', text: 'renderer: {drain_timeout: soon}', env: {}, message: /^config: renderer.drain_timeout: must be a duration/ },
    { name: 'bad listen', text: 'renderer: {http_listen: "9101"}', env: {}, message: /^config: renderer.http_listen: must be host:port/ },
    { name: 'port out of range', text: 'renderer: {http_listen: ":70000"}', env: {}, message: /^config: renderer.http_listen: / },
    { name: 'bad grpc address', text: 'renderer: {grpc_address: "/tmp/x.sock"}', env: {}, message: /^config: renderer.grpc_address: must be unix:\/\/\/path or host:port/ },
    { name: 'empty unix path', text: 'renderer: {grpc_address: "unix://"}', env: {}, message: /^config: renderer.grpc_address: must name a socket path/ },
    { name: 'bad log level', text: 'renderer: {log_level: loud}', env: {}, message: /^config: renderer.log_level: must be one of/ },
    { name: 'renderer not a mapping', text: 'renderer: [1]', env: {}, message: 'config: renderer: must be a mapping' },
    { name: 'not YAML', text: 'renderer: {threads: [', env: {}, message: /^config: file: invalid YAML/ },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      assert.throws(() => parseConfig(c.text, { env: c.env }), (err) => {
        assert.ok(err instanceof ConfigError);
        if (typeof c.message === 'string') assert.equal(err.message, c.message);
        else assert.match(err.message, c.message);
        return true;
      });
    });
  }
});

test('loadConfig reads --config, else SSR_CONFIG, else nothing', (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'ssr.yaml');
  writeFileSync(file, 'renderer: {threads: 5}\n');
  const other = join(dir, 'other.yaml');
  writeFileSync(other, 'renderer: {threads: 6}\n');

  assert.equal(loadConfig({ argv: ['--config', file], env: { SSR_CONFIG: other } }).threads, 5);
  assert.equal(loadConfig({ argv: [`--config=${file}`], env: {} }).threads, 5);
  assert.equal(loadConfig({ argv: [], env: { SSR_CONFIG: other } }).threads, 6);
  assert.equal(loadConfig({ argv: [], env: {} }).threads, availableParallelism() + 1);
  assert.equal(loadConfig({ argv: [], env: { SSR_CONFIG: other, SSR_RENDERER_THREADS: '1' } }).threads, 1);
  assert.throws(() => loadConfig({ argv: ['--config', join(dir, 'missing.yaml')], env: {} }), /cannot read/);
  assert.throws(() => loadConfig({ argv: ['--threads', '2'], env: {} }), /^ConfigError: config: arguments: /);
});

test('--bundle, --socket and --http-listen override the environment, which overrides the file', (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'ssr.yaml');
  writeFileSync(file, 'renderer: {bundle: file.js, grpc_address: "unix:///file.sock", http_listen: ":1"}\n');
  const env = { SSR_RENDERER_BUNDLE: 'env.js', SSR_RENDERER_GRPC_ADDRESS: 'unix:///env.sock', SSR_RENDERER_HTTP_LISTEN: ':2' };
  const pick = (/** @type {import('../src/config.js').Config} */ c) => [c.bundle, c.grpcAddress, c.httpListen];

  assert.deepEqual(pick(loadConfig({ argv: ['--config', file], env: {}, cwd: '/x' })), ['/x/file.js', 'unix:///file.sock', ':1']);
  assert.deepEqual(pick(loadConfig({ argv: ['--config', file], env, cwd: '/x' })), ['/x/env.js', 'unix:///env.sock', ':2']);
  assert.deepEqual(
    pick(loadConfig({ argv: ['--config', file, '--bundle', 'dist/server/server.js', '--socket', '/run/ssr/r.sock', '--http-listen', '127.0.0.1:0'], env, cwd: '/x' })),
    ['/x/dist/server/server.js', 'unix:///run/ssr/r.sock', '127.0.0.1:0'],
  );
  assert.deepEqual(pick(loadConfig({ argv: ['--bundle=b.js', '--socket=r.sock'], env: {}, cwd: '/x' })).slice(0, 2), ['/x/b.js', 'unix:///x/r.sock'],
    'a relative socket path is relative to the working directory');
});

test('the command line: --help, --version; errors name the flag and point at --help', async (t) => {
  assert.deepEqual(parseCommandLine(['--help']), { help: true, version: false, config: undefined, flags: [] });
  assert.deepEqual(parseCommandLine(['--version', '--config', 'c.yaml']), { help: false, version: true, config: 'c.yaml', flags: [] });
  assert.deepEqual(parseCommandLine(['--socket', 'r.sock'], '/x').flags, [{ flag: 'socket', key: 'grpc_address', value: 'unix:///x/r.sock' }]);

  const cases = [
    { name: 'unknown flag', argv: ['--bundel', 'x.js'], key: 'arguments', message: 'config: arguments: unknown option --bundel (--help lists the options)' },
    { name: 'missing value', argv: ['--bundle'], key: 'arguments', message: /^config: arguments: Option '--bundle <value>' argument missing \(--help lists the options\)$/ },
    { name: 'positional argument', argv: ['server.js'], key: 'arguments', message: /^config: arguments: Unexpected argument 'server\.js'.* \(--help lists the options\)$/ },
    { name: 'bad listen address', argv: ['--http-listen', '9101'], key: '--http-listen', message: /^config: --http-listen: must be host:port .*\(got "9101"\)$/ },
    { name: 'empty socket path', argv: ['--socket', ''], key: '--socket', message: /^config: --socket: must name a socket path/ },
    { name: 'empty bundle', argv: ['--bundle', ''], key: '--bundle', message: 'config: --bundle: must be a non-empty string (got "")' },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      assert.throws(() => loadConfig({ argv: c.argv, env: {} }), (err) => {
        assert.ok(err instanceof ConfigError);
        assert.equal(err.key, c.key);
        if (typeof c.message === 'string') assert.equal(err.message, c.message);
        else assert.match(err.message, c.message);
        return true;
      });
    });
  }
});

test('--help names every option, both variables, and each key with its default', () => {
  const text = usage('sidecar-ssr-renderer');
  for (const option of ['--bundle FILE', '--socket PATH', '--http-listen HOST:PORT', '--config FILE', '--help', '--version', 'SSR_CONFIG=FILE', 'SSR_RENDERER_<KEY>=VALUE']) {
    assert.ok(text.includes(option), option);
  }
  assert.match(text, /--bundle FILE .*default app\/dist\/server\/server\.js$/m);
  assert.match(text, /--socket PATH .*default unix:\/\/\/tmp\/sidecar-ssr\/renderer\.sock$/m);
  assert.match(text, /^ {2}drain_timeout +10s$/m);
  assert.match(text, /^ {2}threads +0 \(the cores available \+ 1\)$/m);
  assert.match(text, /^Example:\n {2}sidecar-ssr-renderer --bundle /m);
});
