// The unix socket's path, made safe before grpc-js binds it: the directory is
// ours alone (created 0700 when missing), and a socket file left by a killed
// renderer is replaced, one somebody still answers on is not.
import { mkdir, lstat, unlink } from 'node:fs/promises';
import { connect } from 'node:net';
import { dirname } from 'node:path';

/**
 * grpc-js cannot bind over a socket file left by a killed renderer
 * (EADDRINUSE): remove it when nobody answers on it, refuse when somebody does.
 * @param {string} path
 * @param {string} address for messages
 */
export async function prepareSocketPath(path, address) {
  await prepareSocketDir(dirname(path));
  let stat;
  try {
    stat = await lstat(path);
  } catch (err) {
    if (/** @type {NodeJS.ErrnoException} */ (err).code === 'ENOENT') return;
    throw err;
  }
  if (!stat.isSocket()) throw new Error(`gRPC: ${path} exists and is not a socket; refusing to replace it`);
  if (await somebodyAnswers(path)) throw new Error(`gRPC: another renderer is listening on ${address}`);
  await unlink(path);
}

/**
 * Whoever can write the socket's directory can replace the socket with their
 * own and serve the edge their HTML (the default, /tmp/sidecar-ssr, is a name
 * any local user can take first). The directory is created 0700 when missing;
 * an existing one must be ours and writable by nobody else. Only the last
 * component is ours to judge: the parents (/tmp, a volume) are the platform's.
 * @param {string} dir
 */
async function prepareSocketDir(dir) {
  await mkdir(dirname(dir), { recursive: true });
  try {
    await mkdir(dir, { mode: 0o700 });
  } catch (err) {
    if (/** @type {NodeJS.ErrnoException} */ (err).code !== 'EEXIST') throw err;
  }
  const stat = await lstat(dir);
  const ourUid = process.geteuid?.();
  /** @param {string} problem */
  const refuse = (problem) => new Error(`gRPC: refusing the socket directory ${dir}: ${problem} (owner uid ${stat.uid}, `
    + `this process runs as uid ${ourUid ?? 'unknown'}); another user could replace the socket. Remove it and let the `
    + 'renderer create it (mode 0700), or point renderer.grpc_address at a directory of its own');
  if (stat.isSymbolicLink()) throw refuse('it is a symbolic link');
  if (!stat.isDirectory()) throw refuse('it is not a directory');
  if (ourUid !== undefined && stat.uid !== ourUid) throw refuse('it is owned by another user');
  if ((stat.mode & 0o022) !== 0) {
    throw refuse(`it is writable by group or others (mode 0${(stat.mode & 0o777).toString(8).padStart(3, '0')})`);
  }
}

/**
 * @param {string} path
 * @returns {Promise<boolean>}
 */
function somebodyAnswers(path) {
  return new Promise((resolve) => {
    const socket = connect(path);
    // A live listener accepts at once (the kernel queues the connection);
    // a hang is a busy listener, not a dead one.
    socket.setTimeout(1000, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
