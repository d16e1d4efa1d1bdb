import { getListing } from '../lib/api.js';
import { Home } from '../lib/demo.jsx';
import { listingMetadata } from '../lib/head.js';

// Rendered per request from the shop's current data, like the demo's pages.
export const dynamic = 'force-dynamic';

async function listing(searchParams) {
  const { page } = await searchParams;
  return getListing(Array.isArray(page) ? page[0] : page);
}

export async function generateMetadata({ searchParams }) {
  return listingMetadata(await listing(searchParams));
}

export default async function Page({ searchParams }) {
  return <Home {...await listing(searchParams)} />;
}
