import { ProductReviews } from '../../../../../app/src/pages/ProductReviews.jsx';
import { api } from '../api.server.js';
import { productMeta } from '../head.js';

export async function loader({ params }) {
  const id = encodeURIComponent(params.id);
  // As the Go shop's own page: the product first, then the reviews, slower, left un-awaited
  // so that React Router streams them after the shell (a promise in the loader's data).
  const props = await api(`/api/products/${id}`);
  return { ...props, reviews: api(`/api/products/${id}/reviews`) };
}

export const meta = productMeta;

// The demo's page as it is, reading the reviews with use() in its own Suspense boundary as it
// reads the Go shop's deferred value: the demo's exact markup, where <Await> would need a copy
// of the page.
export default function ProductReviewsRoute({ loaderData }) {
  const { reviews, ...props } = loaderData;
  return <ProductReviews {...props} deferred={{ reviews }} />;
}
