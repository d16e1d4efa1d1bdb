// Summarizes V8 .cpuprofile files (node --cpu-prof): self time by package and the top
// functions, per file, as markdown.
//   node bench/cpu-profile.mjs [--top 15] PROFILE.cpuprofile...
// Packages: node_modules/<name>, node: internals, this repository's files by path, and V8's
// own entries ((garbage collector), (program), (idle)).
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';

const { values: opts, positionals: files } = parseArgs({
  options: { top: { type: 'string', default: '15' } },
  allowPositionals: true,
});

/** @param {{functionName: string, url: string}} frame */
function packageOf({ functionName, url }) {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node: internals';
  const inModules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (inModules) return inModules[1];
  const inRepo = /\/(renderer|app|bench)\/(.+)$/.exec(url);
  return inRepo ? `${inRepo[1]}/${inRepo[2]}` : url;
}

for (const file of files) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  /** @type {Map<string, number>} */
  const selfByFunction = new Map();
  /** @type {Map<string, number>} */
  const selfByPackage = new Map();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    const { callFrame } = byId.get(id);
    if (callFrame.functionName === '(idle)') return; // waiting, not working
    const where = `${callFrame.functionName || '(anonymous)'} ${callFrame.url ? `${basename(callFrame.url)}:${callFrame.lineNumber + 1}` : ''}`;
    selfByFunction.set(where, (selfByFunction.get(where) ?? 0) + us);
    const pkg = packageOf(callFrame);
    selfByPackage.set(pkg, (selfByPackage.get(pkg) ?? 0) + us);
    total += us;
  });
  const rows = (map, n) => [...map].sort((a, b) => b[1] - a[1]).slice(0, n)
    .map(([name, us]) => `| ${name} | ${(us / 1000).toFixed(0)} | ${((100 * us) / total).toFixed(1)} % |`).join('\n');
  console.log(`## ${basename(file)}: ${(total / 1000).toFixed(0)} ms busy\n`);
  console.log(`| package | self ms | share |\n| --- | --- | --- |\n${rows(selfByPackage, 12)}\n`);
  console.log(`| function | self ms | share |\n| --- | --- | --- |\n${rows(selfByFunction, Number(opts.top))}\n`);
}
