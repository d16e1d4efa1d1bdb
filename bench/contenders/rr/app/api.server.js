// The shop's JSON API (shop/api.go), read on the server only: the loaders run there, and the
// browser gets their data in the document (and, on client navigations, from this server).

const base = (process.env.API_URL ?? 'http://127.0.0.1:18080').replace(/\/+$/, '');

/** GET path from the shop as JSON; a 404 becomes the route's 404, anything else not OK a 500. */
export async function api(path) {
  const res = await fetch(base + path);
  if (res.status === 404) {
    await res.body?.cancel();
    throw new Response('Not Found', { status: 404 });
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`${path}: the shop answered ${res.status}`);
  }
  return res.json();
}
