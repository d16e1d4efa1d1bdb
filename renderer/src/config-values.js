// The values config.js checks, each a function that returns the value as the renderer uses
// it or throws the problem (a string) for the key's error: generic shapes (integers, numbers,
// durations, one of a list) and addresses (host:port, gRPC, OTLP, unix sockets), which the
// listeners read too.

/** @param {number} min */
export function integerAtLeast(min) {
  /** @param {unknown} value */
  return (value) => {
    const n = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min) throw `must be an integer >= ${min}`;
    return n;
  };
}

/**
 * @param {number} min
 * @param {number} max
 */
export function numberBetween(min, max) {
  /** @param {unknown} value */
  return (value) => {
    const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isFinite(n) || n < min || n > max) throw `must be a number from ${min} to ${max}`;
    return n;
  };
}

/**
 * "auto" or what `check` accepts.
 * @param {(value: unknown) => string | number} check
 */
export function autoOr(check) {
  /** @param {unknown} value */
  return (value) => {
    if (value === 'auto') return value;
    try {
      return check(value);
    } catch (problem) {
      throw typeof problem === 'string' ? `must be auto or ${problem.replace(/^must be /, '')}` : problem;
    }
  };
}

/**
 * "" (off) or what `check` accepts.
 * @param {(value: unknown) => string | number} check
 */
export function optional(check) {
  /** @param {unknown} value */
  return (value) => (value === '' || value == null ? '' : check(value));
}

/** @param {string[]} allowed */
export function oneOf(allowed) {
  /** @param {unknown} value */
  return (value) => {
    if (typeof value !== 'string' || !allowed.includes(value)) throw `must be one of ${allowed.join(', ')}`;
    return value;
  };
}

/** @param {unknown} value */
export function nonEmptyString(value) {
  if (typeof value !== 'string' || value === '') throw 'must be a non-empty string';
  return value;
}

const DURATION_PART = /(\d+(?:\.\d+)?)(ms|s|m)/y;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000 };

/**
 * Go-style duration ("500ms", "2s", "1m30s") to milliseconds.
 * @param {unknown} value
 */
export function duration(value) {
  const problem = 'must be a duration > 0 such as 500ms, 2s or 1m';
  if (typeof value !== 'string' || value === '') throw problem;
  let ms = 0;
  DURATION_PART.lastIndex = 0;
  while (DURATION_PART.lastIndex < value.length) {
    const match = DURATION_PART.exec(value);
    if (!match) throw problem;
    ms += Number(match[1]) * UNIT_MS[/** @type {keyof UNIT_MS} */ (match[2])];
  }
  if (!(ms > 0)) throw problem;
  return Math.round(ms);
}

/**
 * Splits `host:port` (IPv6 hosts in brackets). Exported for the listeners.
 * @param {string} value
 * @returns {{host: string, port: number} | null}
 */
export function splitHostPort(value) {
  const match = /^(\[[^\]]*\]|[^:[\]]*):(\d{1,5})$/.exec(value);
  if (!match) return null;
  const port = Number(match[2]);
  if (port > 65535) return null;
  return { host: match[1].replace(/^\[(.*)\]$/, '$1'), port };
}

/** @param {unknown} value */
export function hostPort(value) {
  if (typeof value !== 'string' || !splitHostPort(value)) throw 'must be host:port (port 0-65535, empty host = all interfaces)';
  return value;
}

/** A collector's URL: the scheme says TLS or not, and the port is never guessed. */
const OTLP_ENDPOINT = /^https?:\/\/(\[[0-9a-fA-F:.]+\]|[^\s/:@[\]]+):\d{1,5}\/?$/;

/** @param {unknown} value */
export function otlpEndpoint(value) {
  if (typeof value !== 'string' || !OTLP_ENDPOINT.test(value)) {
    throw 'must be an http:// or https:// URL with a port, e.g. http://otel-collector:4317';
  }
  return value;
}

/** @param {unknown} value */
export function grpcAddress(value) {
  if (typeof value === 'string' && value.startsWith('unix:')) {
    if (unixSocketPath(value) === '') throw 'must name a socket path, e.g. unix:///tmp/sidecar-ssr/renderer.sock';
    return value;
  }
  if (typeof value !== 'string' || !splitHostPort(value)) throw 'must be unix:///path or host:port';
  return value;
}

/**
 * The file-system path of a `unix:` address: `unix:///abs` or `unix:relative`,
 * the two forms grpc-js accepts.
 * @param {string} address
 */
export function unixSocketPath(address) {
  return address.startsWith('unix://') ? address.slice('unix://'.length) : address.slice('unix:'.length);
}
