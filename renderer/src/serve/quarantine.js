// Poison-pill quarantine. A request whose render kills its worker (out of
// memory, an endless loop stopped at the deadline, a crash) would otherwise
// be rendered again by every retry and every visitor, each time costing a
// worker and a cold start for everyone else. After `after` such deaths within
// `windowMs` the request is refused at once for `durationMs`, before it can
// reach the pool. A render stopped at its deadline is a death only when it
// pinned its worker (threads/loop-probe.js): one late because it waited, for a
// worker or for data, is not, whatever it cost. A worker holds many renders:
// one of several on a worker that ran out of memory is a suspect, and its
// deaths count only once it is in two such deaths within the window.
//
// A key is one request: a new URL, query or props makes a new one. So a page whose
// renders killed workers under `pageAfter` distinct keys within the window is
// quarantined whole, every request of it refused, whatever its URL.
//
// The logic here is pure (the clock is injected). It stands on the call path,
// beside the handler that uses it: the pool decides blame (errors.js workerLoss
// marks a death as RenderError.poisonPill), render-call.js records it here and
// answers the refused calls before they reach the pool.
import { createHash } from 'node:crypto';
import { islandPage } from '../threads/names.js';

/** @import { IslandRequest, RenderTask } from '../threads/messages.js' */

/**
 * @typedef {object} QuarantineOptions
 * @property {number} after deaths that put a key in quarantine (0: off)
 * @property {number} [pageAfter] distinct keys of one page with deaths that put the
 *   page in quarantine (0 or absent: pages never are)
 * @property {number} windowMs the deaths must fall within this long
 * @property {number} durationMs how long a key stays quarantined
 * @property {number} [maxTracked] keys with recent deaths kept (the ones whose
 *   last death is oldest go first)
 * @property {number} [maxQuarantined] keys quarantined at once (the ones whose
 *   quarantine ends first go first)
 * @property {() => number} [now] epoch ms
 */

/**
 * A key in quarantine.
 * @typedef {object} Sentence
 * @property {number} deaths workers its renders killed (within the window,
 *   plus renders already running when it entered quarantine that died too)
 * @property {number} since epoch ms it entered quarantine
 * @property {number} until epoch ms it leaves quarantine
 * @property {string} [page] set when the whole page is quarantined: deaths is then
 *   the number of its requests that killed workers
 */

/** Enough for every poison URL a bad deploy produces, small enough to never matter (a key is ~50 bytes). */
const MAX_TRACKED = 1000;
const MAX_QUARANTINED = 100;

/** @param {string} page the key under which a whole page is quarantined (no request's key has a NUL) */
const pageKey = (page) => `page\u0000${page}`;

export class Quarantine {
  #after;
  #pageAfter;
  #windowMs;
  #durationMs;
  #maxTracked;
  #maxQuarantined;
  #now;
  /**
   * Death times (epoch ms, oldest first) of keys not in quarantine. Map order
   * is the order of their latest death: the oldest is first.
   * @type {Map<string, number[]>}
   */
  #deaths = new Map();
  /**
   * Map order is the order they entered, so the first one leaves first (every
   * sentence is equally long).
   * @type {Map<string, Sentence>}
   */
  #quarantined = new Map();
  /**
   * Times (epoch ms) of suspect deaths of keys seen in only one so far; bounded
   * as #deaths is.
   * @type {Map<string, number[]>}
   */
  #suspects = new Map();
  /**
   * Of each page with deaths, its keys that died and when (epoch ms); Map order as
   * #deaths's.
   * @type {Map<string, Map<string, number>>}
   */
  #pages = new Map();

  /** @param {QuarantineOptions} options */
  constructor({ after, pageAfter = 0, windowMs, durationMs, maxTracked = MAX_TRACKED, maxQuarantined = MAX_QUARANTINED, now = Date.now }) {
    this.#after = after;
    this.#pageAfter = pageAfter;
    this.#windowMs = windowMs;
    this.#durationMs = durationMs;
    this.#maxTracked = maxTracked;
    this.#maxQuarantined = maxQuarantined;
    this.#now = now;
  }

  /** False when quarantine_after is 0. */
  get enabled() {
    return this.#after > 0;
  }

  /** Keys in quarantine now. */
  get size() {
    this.#release(this.#now());
    return this.#quarantined.size;
  }

  /** Keys with deaths recorded and not (yet) in quarantine. */
  get tracked() {
    return this.#deaths.size;
  }

  /**
   * The sentence of the key, or of its whole page, while it is in quarantine, else undefined.
   * @param {string} key
   * @param {string} [page]
   * @returns {Readonly<Sentence> | undefined}
   */
  check(key, page) {
    return this.#serving(key) ?? (page === undefined ? undefined : this.#serving(pageKey(page)));
  }

  /** @param {string} key */
  #serving(key) {
    const sentence = this.#quarantined.get(key);
    if (!sentence) return undefined;
    if (sentence.until > this.#now()) return sentence;
    this.#quarantined.delete(key);
    return undefined;
  }

  /**
   * Records that a render of `key` killed its worker (`suspect`: it was one of
   * several renders on a worker that ran out of memory), a render of `page` when
   * given. Returns the sentence when this death put the key, or its page, in
   * quarantine (only then), else undefined.
   * @param {string} key
   * @param {{suspect?: boolean, page?: string}} [options]
   * @returns {Readonly<Sentence> | undefined}
   */
  recordDeath(key, { suspect = false, page } = {}) {
    if (!this.enabled) return undefined;
    const now = this.#now();
    this.#release(now);
    let deaths = 1;
    if (suspect) {
      const seen = (this.#suspects.get(key) ?? []).filter((at) => at > now - this.#windowMs);
      this.#suspects.delete(key);
      if (seen.length === 0) {
        this.#suspects.set(key, [now]);
        this.#forget(this.#suspects, now);
        return undefined;
      }
      deaths += seen.length;
    }
    const whole = page === undefined ? undefined : this.#pageDeath(page, key, now);
    const serving = this.#quarantined.get(key);
    if (serving) {
      // A render of it that was already running when it entered quarantine.
      serving.deaths += deaths;
      return whole;
    }
    const recent = (this.#deaths.get(key) ?? []).filter((at) => at > now - this.#windowMs);
    for (let i = 0; i < deaths; i++) recent.push(now);
    this.#deaths.delete(key);
    if (recent.length < this.#after) {
      this.#deaths.set(key, recent);
      this.#forget(this.#deaths, now);
      return whole;
    }
    this.#forget(this.#deaths, now);
    return this.#sentence(key, { deaths: recent.length, since: now, until: now + this.#durationMs }) ?? whole;
  }

  /**
   * Counts a death of `page` under `key`; the page's sentence when it puts it in quarantine.
   * @param {string} page
   * @param {string} key
   * @param {number} now
   */
  #pageDeath(page, key, now) {
    if (this.#pageAfter <= 0 || this.#quarantined.has(pageKey(page))) return undefined;
    const keys = this.#pages.get(page) ?? new Map();
    this.#pages.delete(page);
    keys.delete(key);
    keys.set(key, now);
    for (const [k, at] of keys) {
      if (at > now - this.#windowMs) break;
      keys.delete(k);
    }
    if (keys.size < this.#pageAfter) {
      this.#pages.set(page, keys);
      for (const [oldest, seen] of this.#pages) {
        if (this.#pages.size <= this.#maxTracked && /** @type {number} */ ([...seen.values()].at(-1)) > now - this.#windowMs) break;
        this.#pages.delete(oldest);
      }
      return undefined;
    }
    return this.#sentence(pageKey(page), { deaths: keys.size, since: now, until: now + this.#durationMs, page });
  }

  /**
   * @param {string} key
   * @param {Sentence} sentence
   */
  #sentence(key, sentence) {
    this.#quarantined.set(key, sentence);
    for (const oldest of this.#quarantined.keys()) {
      if (this.#quarantined.size <= this.#maxQuarantined) break;
      this.#quarantined.delete(oldest);
    }
    return sentence;
  }

  /** @param {number} now */
  #release(now) {
    for (const [key, sentence] of this.#quarantined) {
      if (sentence.until > now) break;
      this.#quarantined.delete(key);
    }
  }

  /**
   * Drops keys whose latest death left the window, and the oldest beyond
   * maxTracked.
   * @param {Map<string, number[]>} deaths
   * @param {number} now
   */
  #forget(deaths, now) {
    for (const [key, times] of deaths) {
      if (deaths.size <= this.#maxTracked && /** @type {number} */ (times.at(-1)) > now - this.#windowMs) break;
      deaths.delete(key);
    }
  }
}

/**
 * The identity of a render request: requests with the same key render the
 * same thing. Hashed, so a key is small whatever the URL and props size. An
 * island renders the same on whichever page: its name and props are its key;
 * a batch of islands (RenderIslands) is keyed by its islands' keys in order.
 * @param {Pick<RenderTask, 'page' | 'island' | 'islands' | 'url' | 'params' | 'variants' | 'propsJson'>} task
 */
export function renderKey({ page, island, islands, url, params, variants, propsJson }) {
  if (islands) {
    // A key is 43 characters, never starts with the '[' every other key's hash begins with.
    const hash = createHash('sha256');
    for (const one of islands) hash.update(islandKey(one));
    return hash.digest('base64url');
  }
  if (island !== undefined) return islandKey({ name: island, propsJson });
  return hashed([page, url, sortedEntries(params), sortedEntries(variants)], propsJson);
}

/**
 * The key of one island, as renderKey() gives it for the island's own render.
 * @param {IslandRequest} island
 */
export function islandKey({ name, propsJson }) {
  return hashed([islandPage(name)], propsJson);
}

/**
 * @param {unknown[]} identity
 * @param {Uint8Array | undefined} propsJson
 */
function hashed(identity, propsJson) {
  const hash = createHash('sha256');
  hash.update(JSON.stringify(identity));
  if (propsJson && propsJson.byteLength > 0) hash.update(propsJson);
  return hash.digest('base64url');
}

/**
 * @param {Record<string, string> | undefined} record
 * @returns {Array<[string, string]>}
 */
function sortedEntries(record) {
  return Object.entries(record ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
