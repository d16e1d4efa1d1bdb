import { Home } from '../../../../../app/src/pages/Home.jsx';
import { api } from '../api.server.js';
import { homeMeta } from '../head.js';

export async function loader({ request }) {
  // The shop decides what a missing or junk page means (page 1), as it does for its own pages.
  const page = new URL(request.url).searchParams.get('page');
  return api(page === null ? '/api/listing' : `/api/listing?page=${encodeURIComponent(page)}`);
}

export const meta = homeMeta;

export default function HomeRoute({ loaderData }) {
  return <Home {...loaderData} />;
}
