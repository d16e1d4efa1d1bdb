// The demo's head functions (homeHead, productHead, notFoundHead in app/src/pages) as Next
// metadata: the same titles and descriptions.
import { getProduct } from './api.js';

export function listingMetadata(listing) {
  const page = listing?.page ?? 1;
  return {
    title: `Sidecar Shop: all products${page > 1 ? ` (page ${page})` : ''}`,
    description:
      'A demo shop rendered on the server by sidecar-ssr: a hundred products per page, hydrated in the browser.',
  };
}

export const notFoundMetadata = {
  title: 'Page not found | Sidecar Shop',
  description: 'This page does not exist.',
};

// No product: the page answers notFound(), and its head is the 404's, as in the demo.
export function productMetadata(props) {
  if (!props) return notFoundMetadata;
  return { title: `${props.product.name} | Sidecar Shop`, description: props.product.description };
}

/** The product pages' generateMetadata (the page and its reviews): one API call with the page's, through cache(). */
export async function productPageMetadata({ params }) {
  const { id } = await params;
  return productMetadata(await getProduct(id));
}
