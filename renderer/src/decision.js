// What a page's load() decided before any render (docs/app-contract.md): a redirect, the
// not-found page, or the page with a status. One copy for the worker and the browser; the
// edge decides a Go loader's Result by the same rules, and both sides run the cases of
// proto/testdata/page-decisions.json.

/**
 * The part of a load() result that decides what answers.
 * @typedef {object} Decidable
 * @property {{location: string, status?: number}} [redirect]
 * @property {boolean} [notFound]
 * @property {number} [status]
 */

/**
 * @typedef {{redirect: string, status: number} | {notFound: true, status: 404} | {render: true, status: number}} Decision
 *   a render's status is 0 when load() chose none: the page's own (200)
 */

/** The statuses a redirect may have: those that browsers follow with a Location. */
const REDIRECT_STATUSES = [301, 302, 303, 307, 308];

/**
 * A redirect wins over notFound, notFound over status. A status that no response can have
 * is the page's bug, told rather than sent.
 * @param {Decidable} result
 * @returns {Decision}
 */
export function decide(result) {
  if (result.redirect !== undefined) {
    const { location, status = 302 } = result.redirect ?? {};
    if (typeof location !== 'string' || location === '') {
      throw new Error('load() returned a redirect without a location');
    }
    if (!REDIRECT_STATUSES.includes(status)) {
      throw new Error(`load() returned a redirect with status ${status}, not one of ${REDIRECT_STATUSES.join(', ')}`);
    }
    return { redirect: location, status };
  }
  if (result.notFound) return { notFound: true, status: 404 };
  const status = result.status ?? 0;
  if (status !== 0 && !(Number.isInteger(status) && status >= 200 && status <= 599)) {
    throw new Error(`load() returned status ${status}, not an integer from 200 to 599`);
  }
  return { render: true, status };
}
