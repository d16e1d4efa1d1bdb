// The attackers of the hostile-mix scenario (10-hostile-mix.js), started by loadtest.sh beside
// k6 for a given time, each from a loopback address of its own (k6 is 127.0.0.1, so that the
// edge tells them apart from the ordinary clients as it would tell two hosts):
// - slow readers (127.0.0.3): 16 sockets, each pipelining 400 requests for a compressed page
//   and never reading (they once held every live encoder);
// - non-reading connections (127.0.0.4): 1,030 sockets, each pipelining requests and never
//   reading (they once took the public listener down);
// - a query-value flood (127.0.0.5): /?page=zz<n>, a new value each time, 20 a second, read;
// - forged purges: POST /cache/purge?prefix=/ on the admin listener with a wrong token, 5 a
//   second.
// It prints what each did, as JSON, when it stops (connected sockets; answered requests by
// status). What the edge refused or closed is in its own metrics (loadtest.sh prints them).
//   node loadtest/lib/hostile.mjs EDGE_HOST:PORT ADMIN_HOST:PORT SECONDS
import { request } from 'node:http';
import { connect } from 'node:net';

const [edge, admin, seconds] = process.argv.slice(2);
const [host, port] = edge.split(':');
const until = Date.now() + Number(seconds) * 1000;
const done = [];
const counts = { slow_readers: 0, non_reading: 0, flood: 0, flood_status: {}, forged_purges: 0, forged_status: {} };

/**
 * Sockets from `from` that write `requests` and never read.
 * @param {string} from
 * @param {number} n
 * @param {string} requests
 * @param {'slow_readers' | 'non_reading'} kind
 */
function nonReaders(from, n, requests, kind) {
  for (let i = 0; i < n; i++) {
    const socket = connect({ host, port: Number(port), localAddress: from });
    socket.on('connect', () => {
      counts[kind]++;
      socket.pause(); // never read: the kernel's window fills, then the edge's writes block
      socket.write(requests);
    });
    socket.on('error', () => {});
    done.push(() => socket.destroy());
  }
}

/**
 * Requests from `from` at `perSecond`, each answer read, until the end.
 * @param {string} target host:port
 * @param {string} from
 * @param {number} perSecond
 * @param {(n: number) => {method: string, path: string, headers?: Record<string, string>}} next
 * @param {'flood' | 'forged_purges'} kind
 */
function steady(target, from, perSecond, next, kind) {
  const [h, p] = target.split(':');
  let n = 0;
  const timer = setInterval(() => {
    const { method, path, headers } = next(n++);
    const req = request({ host: h, port: Number(p), method, path, headers, localAddress: from, agent: false }, (res) => {
      counts[kind]++;
      const statuses = kind === 'flood' ? counts.flood_status : counts.forged_status;
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
      res.resume();
    });
    req.on('error', () => {});
    req.end();
  }, 1000 / perSecond);
  done.push(() => clearInterval(timer));
}

const compressed = 'GET /products/1/reviews HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, br, zstd\r\n\r\n';
const page = 'GET /products/1 HTTP/1.1\r\nHost: x\r\n\r\n';
nonReaders('127.0.0.3', 16, compressed.repeat(400), 'slow_readers');
nonReaders('127.0.0.4', 1030, page.repeat(200), 'non_reading');
steady(edge, '127.0.0.5', 20, (n) => ({ method: 'GET', path: `/?page=zz${n}` }), 'flood');
steady(admin, '127.0.0.1', 5, () => ({ method: 'POST', path: '/cache/purge?prefix=/', headers: { Authorization: 'Bearer forged' } }), 'forged_purges');

setTimeout(() => {
  for (const stop of done) stop();
  console.log(JSON.stringify(counts));
}, Math.max(0, until - Date.now()));
