// The processes of the stack the browser tests drive (hydration.test.js, streaming.test.js):
// started from the repository root with JSON logs on stdout, killed at the end whatever happens.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CHROMIUM } from './browser.js';

export const repoDir = path.resolve(import.meta.dirname, '..', '..');
export const paths = {
  node: path.join(repoDir, 'renderer', 'node_modules', '.bin', 'node'),
  renderer: path.join(repoDir, 'renderer', 'src', 'main.js'),
  edge: path.join(repoDir, 'bin', 'edge'),
  shop: path.join(repoDir, 'bin', 'shop'),
  bundle: path.join(repoDir, 'app', 'dist', 'server', 'server.js'),
};
export const builds = [
  { name: 'production', dir: path.join(repoDir, 'app', 'dist', 'client') },
  { name: 'development', dir: path.join(repoDir, 'app', 'dist', 'client-dev') },
];

/** Why a browser test cannot run (a message saying what to do), or null. */
export function missingPrerequisite() {
  if (!existsSync(CHROMIUM)) {
    return `${CHROMIUM} is missing: install Chromium (apt-get install -y chromium), or run \`make test-browser\`, which installs it`;
  }
  for (const need of [paths.node, paths.edge, paths.shop, paths.bundle, ...builds.map((b) => path.join(b.dir, 'manifest.json'))]) {
    if (!existsSync(need)) {
      return `${path.relative(repoDir, need)} is missing: run \`make test-browser\` (it builds the edge, the shop, the app and the development client)`;
    }
  }
  return null;
}

/** @type {Set<import('node:child_process').ChildProcess>} */
const children = new Set();
function killChildren() {
  for (const child of children) child.kill('SIGKILL');
}
process.once('exit', killChildren);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    killChildren();
    process.exit(128 + os.constants.signals[signal]);
  });
}

/** Starts a process whose stdout/stderr lines are kept (JSON lines parsed) for waitLog. */
export function startProcess(name, file, args, env) {
  const child = spawn(file, args, { cwd: repoDir, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  const proc = { name, child, output: '', lines: [], exited: null, waiters: new Set() };
  const onData = (chunk) => {
    const text = chunk.toString();
    proc.output += text;
    for (const line of text.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        proc.lines.push(JSON.parse(line));
      } catch {
        // a line split across chunks: the raw output still has it
      }
    }
    for (const check of proc.waiters) check();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  proc.exit = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      proc.exited = { code, signal };
      children.delete(child);
      for (const check of proc.waiters) check();
      resolve(proc.exited);
    });
  });
  return proc;
}

/** Resolves with the first log line that has every field of `want`. */
export function waitLog(proc, want, timeoutMs = 30_000) {
  return new Promise((resolve, reject) => {
    const matches = (line) => Object.entries(want).every(([key, value]) => line[key] === value);
    const done = (fn, value) => {
      proc.waiters.delete(check);
      clearTimeout(timer);
      fn(value);
    };
    const check = () => {
      const line = proc.lines.find(matches);
      if (line) done(resolve, line);
      else if (proc.exited) done(reject, new Error(`${proc.name} exited (${JSON.stringify(proc.exited)}) before logging ${JSON.stringify(want)}:\n${proc.output}`));
    };
    const timer = setTimeout(() => done(reject, new Error(`${proc.name}: no log line ${JSON.stringify(want)} within ${timeoutMs} ms:\n${proc.output}`)), timeoutMs);
    proc.waiters.add(check);
    check();
  });
}

export async function stopProcess(proc) {
  if (!proc || proc.exited) return;
  proc.child.kill('SIGKILL');
  await proc.exit;
}
