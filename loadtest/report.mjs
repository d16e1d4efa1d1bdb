// Writes figures.json and summary.md for one loadtest run:
//   node loadtest/report.mjs DIR SCENARIO EDGE_CPU_S RENDERER_CPU_S EXTRA_JSON < renderer-metrics.txt
// EXTRA_JSON's cpu_of names the two processes when they are not the edge and the renderer
// (a pareto TARGET: the shop, a framework's).
import { readFileSync, writeFileSync } from 'node:fs';

const [dir, scenario, edgeCpu, rendererCpu, extraJson] = process.argv.slice(2);
const summary = JSON.parse(readFileSync(`${dir}/summary.json`, 'utf8'));
const extra = JSON.parse(extraJson);
const metrics = readFileSync(0, 'utf8');

/** p-quantile in ms of a Prometheus histogram, every label set summed; null when absent. */
function histogramQuantile(name, q) {
  const buckets = new Map();
  for (const line of metrics.split('\n')) {
    const m = line.match(new RegExp(`^${name}_bucket\\{.*le="([^"]+)".*\\} (\\S+)$`));
    if (m) buckets.set(m[1], (buckets.get(m[1]) ?? 0) + Number(m[2]));
  }
  const sorted = [...buckets].map(([le, n]) => [le === '+Inf' ? Infinity : Number(le), n]).sort((a, b) => a[0] - b[0]);
  const total = sorted.at(-1)?.[1];
  if (!total) return null;
  const upper = sorted.find(([, n]) => n >= q * total)[0];
  return upper === Infinity ? Infinity : upper * 1000;
}

const perThousand = (cpu) => (summary.requests ? +((Number(cpu) / summary.requests) * 1000).toFixed(2) : null);
const figures = {
  scenario,
  date: new Date().toISOString(),
  ...summary,
  edge_cpu_s_per_1000: perThousand(edgeCpu),
  renderer_cpu_s_per_1000: perThousand(rendererCpu),
  renderer_gc_pause_p99_ms: histogramQuantile('renderer_gc_pause_seconds', 0.99),
  ...extra,
};
if (extra.renderer_restarted_epoch_ms && summary.last_fallback_epoch_ms) {
  figures.recovery_ms_after_restart = Math.max(0, summary.last_fallback_epoch_ms - extra.renderer_restarted_epoch_ms);
}
writeFileSync(`${dir}/figures.json`, JSON.stringify(figures, null, 2));

const ms = (v) => (v == null ? 'n/a' : v === Infinity ? '> largest bucket' : `${Number(v).toFixed(1)} ms`);
const lines = [
  `# ${scenario}, ${figures.date}`,
  '',
  '| figure | value |',
  '| --- | --- |',
  `| requests | ${summary.requests} (${summary.rps.toFixed(1)} req/s) |`,
  `| latency p50 / p90 / p95 / p99 / p99.9 / max | ${[summary.p50_ms, summary.p90_ms, summary.p95_ms, summary.p99_ms, summary.p999_ms, summary.max_ms].map((v) => (v ?? 0).toFixed(1)).join(' / ')} ms |`,
  `| failed requests (k6) | ${(summary.failed_rate * 100).toFixed(2)} % |`,
  `| 5xx | ${summary.server_errors} |`,
  `| server-rendered | ${(summary.ssr_rate * 100).toFixed(2)} % |`,
  `| fallbacks by reason | ${JSON.stringify(summary.fallbacks_by_reason)} |`,
  `| dropped iterations | ${summary.dropped_iterations} |`,
  `| CPU s per 1000 requests: ${(extra.cpu_of ?? ['edge', 'renderer']).join(' / ')} | ${figures.edge_cpu_s_per_1000} / ${figures.renderer_cpu_s_per_1000} |`,
  `| renderer GC pause p99 | ${ms(figures.renderer_gc_pause_p99_ms)} |`,
  `| thresholds | ${summary.thresholds_ok ? 'all passed' : 'FAILED'} |`,
];
if (figures.recovery_ms_after_restart != null) lines.push(`| last fallback after the renderer restarted | ${figures.recovery_ms_after_restart} ms |`);
if (summary.knee_rps != null) lines.push(`| knee (highest step within the SLO) | ${summary.knee_rps} req/s |`);
if (summary.pareto) {
  const p = summary.pareto;
  lines.push(`| highest healthy rate (p99 ≤ ${p.healthy_p99_ms} ms, errors ≤ ${p.healthy_errors * 100} %) | `
    + `${p.at_connections == null ? 'no healthy step' : `${p.highest_healthy_rps.toFixed(1)} req/s at ${p.at_connections} connections`} |`);
  for (const s of p.steps) {
    lines.push(`| ${s.connections} connections | ${s.rps.toFixed(1)} req/s, p99 ${ms(s.p99_ms)}, errors ${(s.errors * 100).toFixed(2)} %${s.healthy ? '' : ' (not healthy)'} |`);
  }
}
if (summary.slow_clients) {
  const { phases, slow } = summary.slow_clients;
  const pct = (v) => (v == null ? 'n/a' : `${(v * 100).toFixed(2)} %`);
  for (const [label, f] of [['alone', phases.alone], [`beside ${slow.clients} slow clients`, phases.with_slow]]) {
    lines.push(`| ordinary pages ${label}: p50 / p99, fallbacks | ${ms(f.p50_ms)} / ${ms(f.p99_ms)}, ${pct(f.fallback_rate)} (${f.requests} requests) |`);
  }
  lines.push(`| slow pages (reviews after ${slow.slow_ms} ms): p50 / p99, shell / reviews server-rendered | `
    + `${ms(slow.p50_ms)} / ${ms(slow.p99_ms)}, ${pct(slow.shell_rendered_rate)} / ${pct(slow.reviews_rendered_rate)} (${slow.requests} requests) |`);
}
if (summary.hostile_mix) {
  const { phases } = summary.hostile_mix;
  const pct = (v) => (v == null ? 'n/a' : `${(v * 100).toFixed(2)} %`);
  for (const [label, f] of [['alone', phases.alone], ['beside the attackers', phases.with_hostile]]) {
    lines.push(`| ordinary pages ${label}: p50 / p99, fallbacks, bytes a response | ${ms(f.p50_ms)} / ${ms(f.p99_ms)}, ${pct(f.fallback_rate)}, `
      + `${Math.round(f.bytes_per_response ?? 0)} B (${f.requests} requests) |`);
  }
  if (figures.max_rss_mb != null) lines.push(`| the shop's largest resident memory | ${figures.max_rss_mb} MB (pod limit 384 Mi) |`);
}
writeFileSync(`${dir}/summary.md`, `${lines.join('\n')}\n`);
process.stdout.write(`${lines.join('\n')}\n`);
