// Prints make bench's table (markdown) from a results folder:
//   node bench/table.mjs bench/results/<run> FIXED_RATE THREADS
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { cpus } from 'node:os';

const [dir, fixedRate, threads] = process.argv.slice(2);
const json = (f) => JSON.parse(readFileSync(`${dir}/${f}`, 'utf8'));
const ceiling = json('ceiling.json');
const names = ['node-baseline', 'v8go', 'stack-uncached', 'stack-cached', 'node-baseline-db', 'v8go-db', 'shop-uncached'];
/** The listing with props from the shop's database: compared with bare Node doing the same. */
const fromDatabase = (n) => n.endsWith('-db') || n === 'shop-uncached';
/** The knee of every round (run.sh writes <name>-knee-<round>.json), in round order. */
const knees = (n) => readdirSync(dir)
  .map((f) => f.match(new RegExp(`^${n}-knee-(\\d+)\\.json$`)))
  .filter((m) => m !== null)
  .sort((a, b) => Number(a[1]) - Number(b[1]))
  .map((m) => json(m[0]).rps);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? undefined : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const rows = names.filter((n) => existsSync(`${dir}/${n}-fixed/summary.json`)).map((n) => {
  const rounds = knees(n);
  return { n, rounds, knee: median(rounds), fixed: json(`${n}-fixed/summary.json`) };
});
const baseOf = (n) => rows.find((r) => r.n === (fromDatabase(n) ? 'node-baseline-db' : 'node-baseline'))?.knee;
const f = (v) => (v == null ? 'n/a' : Number(v).toFixed(1));
console.log(`# make bench, ${new Date().toISOString().slice(0, 16)}Z, ${cpus().length} cores, ${threads} threads/isolates, ${ceiling.node}\n`);
console.log(`Ceiling: renderToString of the page in one thread: ${ceiling.ops_per_second} renders/s (p50 ${ceiling.p50_ms} ms, p99 ${ceiling.p99_ms} ms, max ${ceiling.max_ms} ms); × cores = ${ceiling.ops_per_second * cpus().length}/s.\n`);
console.log(`| contender | RPS at the knee: median (each round) | vs ceiling × cores | vs bare Node | at ${fixedRate} req/s: p50 / p90 / p99 / p99.9 / max ms | rendered | dropped |`);
console.log('| --- | --- | --- | --- | --- | --- | --- |');
for (const { n, rounds, knee, fixed } of rows) {
  console.log(`| ${n} | ${knee ?? 'n/a'}${rounds.length > 1 ? ` (${rounds.join(', ')})` : ''} | ${knee ? (knee / (ceiling.ops_per_second * cpus().length)).toFixed(2) + '×' : 'n/a'} | ${baseOf(n) && knee ? (knee / baseOf(n)).toFixed(2) + '×' : 'n/a'} | ` +
    `${[fixed.p50_ms, fixed.p90_ms, fixed.p99_ms, fixed.p999_ms, fixed.max_ms].map(f).join(' / ')} | ` +
    `${fixed.ssr_rate == null ? 'n/a' : (fixed.ssr_rate * 100).toFixed(1) + ' %'} | ${fixed.dropped_iterations ?? 'n/a'} |`);
}
console.log('\nRows ending -db and shop-uncached render the same listing with its props read from the shop\'s SQLite database '
  + '(shop/catalog) by each contender the way its architecture would; their "vs bare Node" is against node-baseline-db.');
console.log('\nKnee: the highest step of a stepped constant-arrival-rate run (k6) with p99 ≤ 150 ms, ≥ 99 % of pages server-rendered and ≤ 1 % dropped iterations; '
  + 'the contenders take turns within each round; ratios are of the medians.');

// CPU per request during the fixed-rate run, by process and thread group (bench/thread-cpu.mjs).
const cpu = names.filter((n) => existsSync(`${dir}/${n}-cpu.json`)).map((n) => ({ n, ...json(`${n}-cpu.json`) }));
if (cpu.length > 0) {
  const ms = (v) => (v == null ? '-' : v.toFixed(2));
  const node = (group) => (c) => c.node?.[group];
  const components = [
    ['Go process (edge, or v8go)', (c) => (c.edge ?? c.go)?.total],
    ['Node main thread', node('main thread')],
    ['Node render workers', node('render workers')],
    ['Node V8 helper threads (GC, compile)', node('V8 helper threads (GC, compile)')],
    ['Node other threads (incl. workers retired during the run)', (c) => (c.node ? (c.node['libuv threads'] ?? 0) + (c.node.other ?? 0) : undefined)],
    ['**all processes**', (c) => (c.edge?.total ?? 0) + (c.go?.total ?? 0) + (c.node?.total ?? 0)],
  ];
  console.log(`\n## CPU ms per request at ${fixedRate} req/s (from /proc, load generator excluded)\n`);
  console.log(`| component | ${cpu.map((c) => c.n).join(' | ')} |`);
  console.log(`| --- | ${cpu.map(() => '---').join(' | ')} |`);
  for (const [label, get] of components) console.log(`| ${label} | ${cpu.map((c) => ms(get(c))).join(' | ')} |`);
}
