import { notFound } from 'next/navigation';
import { getProduct, getReviews } from '../../../../lib/api.js';
import { ProductReviews } from '../../../../lib/demo.jsx';
import { productPageMetadata } from '../../../../lib/head.js';

export const dynamic = 'force-dynamic';

export const generateMetadata = productPageMetadata;

export default async function Page({ params }) {
  const { id } = await params;
  // Asked at once, beside the product, and not awaited: the shell goes out with the product,
  // and the reviews stream into the demo's Suspense boundary when the shop answers, through
  // the promise Next hands to the client component (its use() reads it).
  const reviews = getReviews(id);
  // Seen here, so that an unknown id (the reviews' 404 resolves to null) or a failure the
  // page never shows is not an unhandled rejection; the client's boundary still gets it.
  reviews.catch(() => {});
  const props = await getProduct(id);
  if (!props) notFound();
  return <ProductReviews {...props} deferred={{ reviews }} />;
}
