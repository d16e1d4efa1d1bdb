// Prints make bench's table (markdown) from a results folder:
//   node bench/table.mjs bench/results/<run> FIXED_RATE THREADS
// Runs are named CONTENDER (identity: no Accept-Encoding) or CONTENDER+compressed (a browser's
// Accept-Encoding); each is compared with bare Node in the same mode, and on the same page.
// The streaming runs (bench.sh: -stream, -stream-300, -unstreamed), the shop's reviews
// (shop-reviews, shop-reviews-0) and its product page (shop-product, beside the frameworks')
// get tables of their own; the frameworks' runs (next-*, rr-*, inertia-*) sit beside the
// stack's on their page and get one table more, the stack against each.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { cpus } from 'node:os';

const [dir, threads] = process.argv.slice(2);
const json = (f) => JSON.parse(readFileSync(`${dir}/${f}`, 'utf8'));
const ceiling = json('ceiling.json');
// The props-from-Go rows first: how a Go shop uses the product. Bare Node on its main thread
// (node-mainthread-*) follows bare Node with its worker pool on each page.
const FRAMEWORKS = { next: 'Next.js', rr: 'React Router', inertia: 'Inertia-style' };
const contenders = ['node-baseline-db', 'node-mainthread-db', 'v8go-db', 'shop-uncached', 'next-listing', 'rr-listing', 'inertia-listing',
  'shop-product', 'next-product', 'rr-product', 'inertia-product', 'node-baseline', 'node-mainthread', 'v8go', 'stack-uncached',
  'stack-traced-uncached', 'stack-cached', 'node-baseline-unstreamed', 'node-mainthread-unstreamed', 'stack-unstreamed', 'node-baseline-stream',
  'node-mainthread-stream', 'stack-stream', 'node-baseline-stream-300', 'node-mainthread-stream-300', 'stack-stream-300', 'shop-reviews-0', 'shop-reviews', 'next-reviews', 'rr-reviews',
  'shop-prerendered', 'shop-product-cached'];
const COMPRESSED = '+compressed';
/** Every run with a fixed-rate summary, in contender order, identity before compressed. */
const names = contenders.flatMap((c) => [c, c + COMPRESSED]).filter((n) => existsSync(`${dir}/${n}-fixed/summary.json`));
const contender = (n) => n.replace(COMPRESSED, '');
/** The listing with props from the shop's database: compared with bare Node doing the same. */
const fromDatabase = (n) => /-(db|listing)$/.test(contender(n)) || contender(n) === 'shop-uncached';
/** The product page with its props from the shop (its Go loader, or its JSON API): no bare Node row. */
const product = (n) => contender(n).endsWith('-product');
/**
 * The product page of the streaming runs: `-stream` (its reviews' boundary resolving at once),
 * `-stream-300` (after 300 ms) or `-unstreamed` (the page whole, without reviews); '' for the
 * other runs.
 */
const streaming = (n) => /-(stream|stream-300|unstreamed)$/.exec(contender(n))?.[0] ?? '';
/**
 * The shop's streamed page with its reviews a deferred value from Go (no bare Node does that),
 * and the frameworks' with their reviews a 300 ms fetch from its API.
 */
const deferred = (n) => contender(n).startsWith('shop-reviews') || /^(next|rr)-reviews$/.test(contender(n));
/** The partially prerendered page, and the cached hit its time to first byte is held to. */
const prerendered = (n) => ['shop-prerendered', 'shop-product-cached'].includes(contender(n));
/** The framework a run is of (bench/contenders/), or undefined for this project's own. */
const framework = (n) => FRAMEWORKS[contender(n).split('-')[0]];
/** The stack's run on a framework run's page, in its mode. */
const stackName = (n) => (fromDatabase(n) ? 'shop-uncached' : product(n) ? 'shop-product' : 'shop-reviews') + (n.endsWith(COMPRESSED) ? COMPRESSED : '');
/** Which fixed rate n ran at (bench.sh's fixed-rate.json keys, less the mode). */
const groupOf = (n) => (prerendered(n) ? 'prerender' : fromDatabase(n) ? 'db' : product(n) ? 'product' : deferred(n) ? 'deferred' : streaming(n) === '-stream-300' ? 'stream-300' : streaming(n) ? 'stream' : 'page');
/** The run n is compared with: bare Node (its worker pool), on the same page, in the same mode. */
const baseName = (n) => (deferred(n) || product(n) ? undefined : (fromDatabase(n) ? 'node-baseline-db' : 'node-baseline' + streaming(n)) + (n.endsWith(COMPRESSED) ? COMPRESSED : ''));
/**
 * For a page whose data waits (a 300 ms boundary, the shop's deferred reviews): the same
 * contender on the same page with its data at once, whose knee the wait should not lower.
 */
const atOnceName = (n) => (groupOf(n) === 'stream-300' ? contender(n).replace(/-300$/, '') : contender(n) === 'shop-reviews' ? 'shop-reviews-0' : undefined);
/** The knee of every round (bench.sh writes <name>-knee-<round>.json), in round order. */
const knees = (n) => readdirSync(dir)
  .map((f) => (f.startsWith(`${n}-knee-`) ? /^(\d+)\.json$/.exec(f.slice(`${n}-knee-`.length)) : null))
  .filter((m) => m !== null)
  .sort((a, b) => Number(a[1]) - Number(b[1]))
  .map((m) => json(`${n}-knee-${m[0]}`).rps);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? undefined : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const maybe = (f) => (existsSync(`${dir}/${f}`) ? json(f) : undefined);
const rows = names.map((n) => {
  const rounds = knees(n);
  return {
    n, rounds, knee: median(rounds), fixed: json(`${n}-fixed/summary.json`), served: maybe(`${n}-encoding.json`), cpu: maybe(`${n}-cpu.json`),
    shell: maybe(`${n}-shell.json`), starts: maybe(`${n}-starts.json`),
  };
});
const row = (n) => rows.find((r) => r.n === n);
const ratio = (v, base) => (v && base ? (v / base).toFixed(2) + '×' : 'n/a');
const f = (v) => (v == null ? 'n/a' : Number(v).toFixed(1));
/** How the page went out: its Content-Encoding and the average bytes per response on the wire (k6's data_received, headers included). */
const served = ({ served: s, fixed }) => `${s ? s.content_encoding || 'identity' : 'n/a'}, ${fixed.received_bytes_per_request ? (fixed.received_bytes_per_request / 1000).toFixed(1) + ' kB' : 'n/a'}`;
/** All of a run's processes, CPU ms per request (bench.sh labels them edge, go, node, api). */
const cpuTotal = (c) => (c ? Object.values(c).reduce((sum, p) => sum + (p?.total ?? 0), 0) : undefined);

/** The fixed rate of each page and mode, and why (bench.sh writes fixed-rate.json). */
const fixedRates = json('fixed-rate.json');
const rateKey = (n) => `${groupOf(n)}${n.endsWith(COMPRESSED) ? COMPRESSED : ''}`;
const rateOf = (n) => fixedRates[rateKey(n)];
const why = (m) => ({
  // (Folders from before the streaming rows give no rounding: 5.)
  knee: `70 % of ${m.run}'s median knee (${m.knee} req/s), rounded to ${m.round ?? 5}`,
  FIXED_RATE: 'set by FIXED_RATE',
  default: `the default: this run has no knee of ${m.run} (SKIP_KNEE, not run, or a knee of 0)`,
}[m.source]);

console.log(`# make bench, ${new Date().toISOString().slice(0, 16)}Z, ${cpus().length} cores, ${threads} threads/isolates, ${ceiling.node}\n`);
console.log(`Ceiling: a worker's render of the page (renderPage) in one thread: ${ceiling.ops_per_second} renders/s (p50 ${ceiling.p50_ms} ms, p99 ${ceiling.p99_ms} ms, max ${ceiling.max_ms} ms); × cores = ${ceiling.ops_per_second * cpus().length}/s.\n`);
// The stack against what a Go team would otherwise run, a page and mode a row: knee, CPU per
// request and p99 at the page's common fixed rate.
if (rows.some((r) => framework(r.n))) {
  const pages = [
    ['the listing, props from Go', 'shop-uncached', 'listing', 'node-baseline-db'],
    ['the product page', 'shop-product', 'product', 'node-baseline-unstreamed'],
    ['the reviews page, streamed, its reviews after 300 ms', 'shop-reviews', 'reviews', 'node-mainthread-stream-300'],
  ].flatMap(([title, stack, page, bare]) => [
    [title, stack, (fw) => `${fw}-${page}`, bare],
    [`${title}, compressed`, stack + COMPRESSED, (fw) => `${fw}-${page}${COMPRESSED}`, bare + COMPRESSED],
  ]);
  /** n's figures; its fixed rate too when it ran at another than the row's (bare Node's pages are grouped with this project's). */
  const cell = (n, rate) => {
    const r = row(n);
    const own = rateOf(n)?.rate;
    return r ? `${r.knee ?? 'n/a'} / ${r.cpu ? cpuTotal(r.cpu).toFixed(2) : 'n/a'} / ${f(r.fixed.p99_ms)}${own !== rate ? ` (at ${own} req/s)` : ''}` : '-';
  };
  console.log('## The stack against the frameworks\n');
  console.log('Each cell: the knee (req/s, median of the rounds) / CPU ms per request, all processes / p99 ms at the page\'s fixed rate (below).\n');
  console.log(`| page | the stack | ${Object.values(FRAMEWORKS).join(' | ')} | bare Node |`);
  console.log(`| --- | --- | ${Object.values(FRAMEWORKS).map(() => '---').join(' | ')} | --- |`);
  for (const [title, stack, of, bare] of pages) {
    const rate = rateOf(stack)?.rate;
    const cells = Object.keys(FRAMEWORKS).map((fw) => cell(of(fw), rate));
    if (!row(stack) && cells.every((c) => c === '-')) continue;
    console.log(`| ${title} (${rate ?? 'n/a'} req/s) | ${cell(stack, rate)} | ${cells.join(' | ')} | ${cell(bare, rate)} |`);
  }
  console.log('\nBare Node: fastify + Piscina with its data in-process (node-baseline-db reads the same SQLite; on the product page its '
    + 'props are computed in JS, node-baseline-unstreamed; on the reviews page it renders on its main thread, its reviews a 300 ms timer).\n');
}
const tables = [
  ['Props from Go: the listing with its props read from the shop\'s SQLite database', 'db'],
  ['The product page, its props from the shop: its Go loader (shop-product, uncached), its JSON API (the frameworks)', 'product'],
  ['The demo page: props from its own load()', 'page'],
  ['Streaming: the product page with its reviews in a Suspense boundary resolving at once, and the page whole', 'stream'],
  ['Streaming: the reviews\' boundary resolving after 300 ms', 'stream-300'],
  ['Deferred values from Go: the shop\'s reviews page, its reviews after -reviews-delay (shop-reviews: 300 ms, shop-reviews-0: none)', 'deferred'],
  ['Partial prerendering: the reviews page\'s stored shell, its cart line and reviews resumed per request (shop-prerendered); a cached hit of the product page (shop-product-cached)', 'prerender'],
];
const hasFrameworks = (group) => rows.some((r) => framework(r.n) && groupOf(r.n) === group);
/**
 * The same figures in every table; the streaming ones add the time to first byte, and those
 * at the -unstreamed runs' rate streaming's CPU against the page whole.
 * @param {string} group
 */
const columns = (group) => {
  const streamed = group.startsWith('stream') || group === 'deferred' || group === 'prerender';
  return [
    ['run', (r) => r.n],
    ['served as', served],
    ['RPS at the knee: median (each round)', (r) => `${r.knee ?? 'n/a'}${r.rounds.length > 1 ? ` (${r.rounds.join(', ')})` : ''}`],
    // The ceiling renders the home page: no measure of another page's.
    ...(streamed ? [] : [['vs ceiling × cores', (r) => (r.knee ? (r.knee / (ceiling.ops_per_second * cpus().length)).toFixed(2) + '×' : 'n/a')]]),
    ...(['deferred', 'product', 'prerender'].includes(group) ? [] : [['vs bare Node', (r) => ratio(r.knee, row(baseName(r.n))?.knee)]]),
    ...(hasFrameworks(group) ? [['the stack vs it', (r) => (framework(r.n) ? ratio(row(stackName(r.n))?.knee, r.knee) : '')]] : []),
    ...(group === 'stream-300' || group === 'deferred' ? [['vs its data at once (target ≥ 0.9)', (r) => ratio(r.knee, row(atOnceName(r.n))?.knee)]] : []),
    ...(group === 'stream-300' ? [['vs bare Node on its main thread', (r) => ratio(r.knee, row('node-mainthread-stream-300')?.knee)]] : []),
    ['fixed rate', (r) => rateOf(r.n).rate],
    ['at it: p50 / p90 / p99 / p99.9 / max ms', ({ fixed }) => [fixed.p50_ms, fixed.p90_ms, fixed.p99_ms, fixed.p999_ms, fixed.max_ms].map(f).join(' / ')],
    ['p99/p50', ({ fixed }) => ratio(fixed.p99_ms, fixed.p50_ms)],
    ...(streamed ? [
      ['TTFB p50 / p99 ms', ({ fixed }) => `${f(fixed.ttfb_p50_ms)} / ${f(fixed.ttfb_p99_ms)}`],
      ['shell at low load ms', ({ shell }) => f(shell?.p50_ms)],
      ['TTFB p99 − shell ms (target ≤ 5)', ({ fixed, shell }) => (shell?.p50_ms != null && fixed.ttfb_p99_ms != null ? f(fixed.ttfb_p99_ms - shell.p50_ms) : 'n/a')],
    ] : []),
    ['rendered', ({ fixed }) => (fixed.ssr_rate == null ? 'n/a' : (fixed.ssr_rate * 100).toFixed(1) + ' %')],
    ['dropped', ({ fixed }) => fixed.dropped_iterations ?? 'n/a'],
    ['CPU ms per request', (r) => (r.cpu ? cpuTotal(r.cpu).toFixed(2) : 'n/a')],
    ...(['deferred', 'product', 'prerender'].includes(group) ? [] : [['vs bare Node', (r) => ratio(cpuTotal(r.cpu), cpuTotal(row(baseName(r.n))?.cpu))]]),
    ...(hasFrameworks(group) ? [['the stack vs it', (r) => (framework(r.n) ? ratio(cpuTotal(row(stackName(r.n))?.cpu), cpuTotal(r.cpu)) : '')]] : []),
    ...(group === 'stream' ? [['CPU vs the page whole', (r) => ratio(cpuTotal(r.cpu), cpuTotal(row(r.n.replace(/-stream$/, '-unstreamed'))?.cpu))]] : []),
  ];
};
for (const [title, group] of tables) {
  const members = rows.filter((r) => groupOf(r.n) === group);
  if (members.length === 0) continue;
  console.log(`## ${title}\n`);
  const keys = [...new Set(members.map((r) => rateKey(r.n)))];
  console.log(`Fixed rate: ${keys.map((k) => `${k.endsWith(COMPRESSED) ? 'compressed' : 'identity'} ${fixedRates[k].rate} req/s, ${why(fixedRates[k])}`).join('; ')}.\n`);
  const cols = columns(group);
  console.log(`| ${cols.map(([label]) => label).join(' | ')} |`);
  console.log(`| ${cols.map(() => '---').join(' | ')} |`);
  for (const r of members) console.log(`| ${cols.map(([, cell]) => cell(r)).join(' | ')} |`);
  console.log('');
}
console.log(`Runs ending ${COMPRESSED} send a browser's \`Accept-Encoding: gzip, deflate, br, zstd\` (the others none), and their "vs bare Node" is against `
  + `bare Node in the same mode (node-baseline${COMPRESSED}: @fastify/compress at its defaults). "Served as": the page's Content-Encoding `
  + 'and the average bytes per response on the wire, headers included, during the fixed-rate run.');
console.log('\nThe props-from-Go rows (-db, shop-uncached) render the same listing with its props read from the shop\'s SQLite database '
  + '(shop/catalog) by each contender the way its architecture would; their "vs bare Node" is against node-baseline-db, and their fixed '
  + 'rate is 70 % of the shop\'s own knee.');
console.log('\nKnee: the highest step of a stepped constant-arrival-rate run (k6, stopped after its first failing step) with p99 ≤ 150 ms, '
  + '≥ 99 % of pages server-rendered and ≤ 1 % dropped iterations; the runs take turns within each round; ratios are of the medians. '
  + 'CPU: all of the run\'s processes during the fixed-rate run (below).');
if (rows.some((r) => streaming(r.n))) {
  console.log('\nThe streaming rows: /products/1/reviews streamed (-stream, -stream-300: its reviews\' Suspense boundary resolving at once, '
    + 'or after 300 ms, the knee then judged on p99 ≤ 450 ms), or /products/1 rendered whole (-unstreamed: the same product page without '
    + 'its reviews); uncached, identity, the edge without 103 Early Hints. TTFB: k6\'s http_req_waiting, to the first byte of the response '
    + '(the document\'s head with the shell). Shell at low load: the median of the edge\'s Server-Timing shell;dur (from the request\'s '
    + 'arrival to the shell\'s from the renderer) over 21 requests one at a time; the target is TTFB p99 ≤ it + 5 ms at 70 % of the knee. '
    + '"CPU vs the page whole": against the same contender\'s -unstreamed run. While the 300 ms page\'s knee is a few requests per second, '
    + 'CPU per request is mostly what the processes spend anyway (timers, health checks, GC) shared by few requests: '
    + 'streaming\'s cost is the -stream rows\'.');
}
if (rows.some((r) => groupOf(r.n) === 'stream-300' || deferred(r.n))) {
  console.log('\n"vs its data at once": the run\'s knee against the same contender\'s on the same page with its data at once (-stream-300 against '
    + '-stream, shop-reviews against shop-reviews-0), the ratio a render that waits for data should hold at 0.9 or more; "vs bare Node on its main '
    + 'thread": against node-mainthread-stream-300 (fastify rendering on its one thread, no worker pool, as React Router and Next.js do). '
    + 'node-mainthread rows\' "vs bare Node" is against bare Node with its worker pool. The shop\'s rows: /products/1/reviews uncached '
    + '(Authorization), its reviews a deferred value from Go sent into the running render; both at the fixed rate taken from shop-reviews\'s knee.');
}

// Issue 49's targets: the prerendered page's time to first byte against a cached hit's at the
// same rate, and its CPU and knee against the same page rendered whole, uncached.
const ppr = row('shop-prerendered');
if (ppr) {
  const hit = row('shop-product-cached');
  const whole = row('shop-reviews-0');
  console.log('\nPartial prerendering, in this run: time to first byte p99 '
    + `${ratio(ppr.fixed.ttfb_p99_ms, hit?.fixed.ttfb_p99_ms)} a cached hit's (shop-product-cached, target ≤ 1.2×); `
    + `CPU per request ${ratio(cpuTotal(ppr.cpu), cpuTotal(whole?.cpu))} the page whole, uncached (shop-reviews-0, target ≤ 0.5×); `
    + `knee ${ratio(ppr.knee, whole?.knee)} its (target ≥ 2×). shop-prerendered sends a visitor's cookies (user, cart_1) and no Authorization; `
    + 'its first byte is the stored shell, its end the resumed cart line and reviews.');
}

// CPU per request during the fixed-rate run, by process and thread group (bench/thread-cpu.mjs).
const cpu = rows.filter((r) => r.cpu).map((r) => ({ n: r.n, base: row(baseName(r.n))?.cpu, starts: r.starts, ...r.cpu }));
if (cpu.length > 0) {
  const ms = (v) => (v == null ? '-' : v.toFixed(2));
  const node = (group) => (c) => c.node?.[group];
  // The shop's loader alone, measured apart (bench.sh: go test -bench ListingProps): what is
  // left of its Go process is the edge's own work on the page.
  const loader = maybe('loader.json');
  const loaderMs = (n) => (contender(n) !== 'shop-uncached' ? 0 : loader ? loader.query_ms + loader.marshal_ms : undefined);
  const components = [
    ['Go process (edge, v8go, or the Inertia-style Go handlers)', (c) => (c.edge ?? c.go)?.total],
    ['the shop\'s Go JSON API (Next.js, React Router)', (c) => c.api?.total],
    [`Go process less its loader (the shop's query + marshal${loader ? `, ${(loader.query_ms + loader.marshal_ms).toFixed(2)} ms` : ''}: go test -bench ListingProps)`,
      (c) => (c.edge && loaderMs(c.n) !== undefined ? c.edge.total - loaderMs(c.n) : undefined)],
    ['Node main thread', node('main thread')],
    ['Node render workers', node('render workers')],
    ['Node V8 helper threads (GC, compile)', node('V8 helper threads (GC, compile)')],
    ['Node libuv threads (zlib streams: @fastify/compress)', node('libuv threads')],
    ['Node other threads (incl. workers retired during the run)', node('other')],
    ['Node workers\' starts during the run, within the two rows above (renderer_worker_start_cpu_seconds)', (c) => c.starts?.ms_per_request],
    ['recycling at max_renders: a worker\'s mean start over max_renders (renderer_worker_start_cpu_seconds)',
      (c) => c.starts?.at_max_renders_ms],
    ['**all processes**', cpuTotal],
  ];
  console.log('\n## CPU ms per request at the fixed rate (from /proc, load generator excluded)\n');
  console.log(`| component | ${cpu.map((c) => c.n).join(' | ')} |`);
  console.log(`| --- | ${cpu.map(() => '---').join(' | ')} |`);
  for (const [label, get] of components) console.log(`| ${label} | ${cpu.map((c) => ms(get(c))).join(' | ')} |`);
  console.log(`| **all processes, vs bare Node** (same page, same mode) | ${cpu.map((c) => ratio(cpuTotal(c), cpuTotal(c.base))).join(' | ')} |`);
  for (const c of cpu.filter((c) => c.starts && c.node)) {
    const { start_ms: start, max_renders: renders, at_max_renders_ms: each } = c.starts;
    console.log(`\n${c.n}: a worker's start, ${start} ms of its thread's CPU (mean of the renderer's starts), over max_renders ${renders}: `
      + `${each} ms a render, ${((100 * each) / c.node.total).toFixed(2)} % of the renderer's CPU per request.`);
  }
}
