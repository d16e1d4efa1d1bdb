// Prints make bench's islands table (markdown) from `go test -bench Islands` output on stdin
// (edge/e2e BenchmarkIslands): the median of each case's runs, and the ratios issue 39
// targets: 10 islands against the same 10 components as one page (CPU ≤ 1.2×), every island
// cached against the template alone (CPU ≤ 1.2×).
import { readFileSync } from 'node:fs';

const runs = {};
for (const line of readFileSync(0, 'utf8').split('\n')) {
  const m = /^Benchmark(?:Islands|OneIsland)\/(\S+?)(?:-\d+)?\s+\d+\s+(.*)$/.exec(line);
  if (!m) continue;
  if (line.startsWith('BenchmarkOneIsland')) m[1] = `50 clients: ${m[1]}`;
  const values = {};
  for (const [, v, unit] of m[2].matchAll(/([\d.]+) (\S+)/g)) values[unit] = Number(v);
  (runs[m[1]] ??= []).push(values);
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const of = (name, unit) => (runs[name] ? median(runs[name].map((r) => r[unit])) : undefined);
const ms = (v) => (v === undefined ? 'n/a' : v.toFixed(3));
const ratio = (a, b) => (a !== undefined && b ? (a / b).toFixed(2) + '×' : 'n/a');

console.log('## Islands in a Go template (edge/e2e BenchmarkIslands: 10 FeaturedProducts islands, requests one at a time)\n');
console.log('| case | runs | time to the page, ms | CPU ms per page (Go, renderer) |');
console.log('| --- | --- | --- | --- |');
for (const name of ['template', 'islands-cached', 'islands', 'page']) {
  if (!runs[name]) continue;
  console.log(`| ${name} | ${runs[name].length} | ${ms(of(name, 'ns/op') / 1e6)} | ${ms(of(name, 'cpu-ms/page'))} (${ms(of(name, 'go-cpu-ms/page'))}, ${ms(of(name, 'renderer-cpu-ms/page'))}) |`);
}
console.log(`\n10 islands against the same 10 components as one page: CPU ${ratio(of('islands', 'cpu-ms/page'), of('page', 'cpu-ms/page'))} (target ≤ 1.2×), `
  + `time ${ratio(of('islands', 'ns/op'), of('page', 'ns/op'))}; every island cached against the template alone: CPU `
  + `${ratio(of('islands-cached', 'cpu-ms/page'), of('template', 'cpu-ms/page'))} (target ≤ 1.2×), ${ms(of('islands-cached', 'cpu-ms/page') - of('template', 'cpu-ms/page'))} ms more.`);

const alone = of('50 clients: template', 'ns/op');
const island = of('50 clients: one-island', 'ns/op');
if (alone !== undefined && island !== undefined) {
  const rps = (ns) => Math.round(1e9 / ns);
  console.log(`\nA template with one per-visitor island under 50 clients at once (BenchmarkOneIsland, HTTP, keep-alive): `
    + `${rps(island)} req/s against ${rps(alone)} for the template alone, ${(alone / island).toFixed(2)}× (issue 45's target ≥ 0.33×).\n`);
  console.log('| 50 clients | req/s | CPU ms per request (Go: clients and server, renderer) |');
  console.log('| --- | --- | --- |');
  for (const name of ['template', 'one-island', 'ten-islands'].map((c) => `50 clients: ${c}`)) {
    if (!runs[name]) continue;
    console.log(`| ${name.slice('50 clients: '.length)} | ${rps(of(name, 'ns/op'))} | ${ms(of(name, 'go-cpu-ms/req'))}, ${ms(of(name, 'renderer-cpu-ms/req'))} |`);
  }
}
