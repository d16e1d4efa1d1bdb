import { cache } from 'react';

// The shop's Go process owns the data; this server only renders it.
const API_URL = process.env.API_URL ?? 'http://127.0.0.1:18080';

async function getJSON(path) {
  // no-store: every request asks the shop, as the demo's renderer does (no Data Cache).
  const res = await fetch(`${API_URL}${path}`, { cache: 'no-store' });
  if (res.status === 404) return null;
  if (!res.ok) throw new Error(`GET ${path}: ${res.status}`);
  return res.json();
}

// cache(): generateMetadata and the page share one API call per request.
export const getListing = cache((page) =>
  getJSON(page === undefined ? '/api/listing' : `/api/listing?page=${encodeURIComponent(page)}`),
);

export const getProduct = cache((id) => getJSON(`/api/products/${encodeURIComponent(id)}`));

export function getReviews(id) {
  return getJSON(`/api/products/${encodeURIComponent(id)}/reviews`);
}
