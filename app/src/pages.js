// The page and island registry, shared by the server entry (server.js) and the client
// entry (client.jsx). The edge's routes refer to pages by these names, a Go template's
// {{ island "NAME" .Props }} to islands by theirs.
import { CartSummary } from './islands/CartSummary.jsx';
import { FeaturedProducts } from './islands/FeaturedProducts.jsx';
import { Flaky } from './islands/Flaky.jsx';
import { Home, homeHead, loadHome } from './pages/Home.jsx';
import { NotFound, notFoundHead } from './pages/NotFound.jsx';
import { Product, loadProduct, productHead } from './pages/Product.jsx';
import { ProductReviews } from './pages/ProductReviews.jsx';
import { reviewsOf } from './reviews.js';

/**
 * A Go server (shop/) reads the catalog from its database and hands the page its props;
 * without one (the config-only edge), the page computes them from the catalog itself.
 */
const unlessGiven = (load) => (ctx) => (Object.keys(ctx.props ?? {}).length > 0 ? { props: ctx.props } : load(ctx));

export const pages = {
  home: { component: Home, load: unlessGiven(loadHome), head: homeHead },
  product: { component: Product, load: unlessGiven(loadProduct), head: productHead },
  // Streams (its route's `stream: true`): renderToString would leave its reviews to the browser.
  'product-reviews': { component: ProductReviews, load: unlessGiven(loadProduct), head: productHead },
  'not-found': { component: NotFound, head: notFoundHead },
};

/** Components the Go server's own templates place (docs/app-contract.md, "Islands in a Go template"). */
export const islands = { FeaturedProducts, CartSummary, Flaky };

/** Rendered (status 404) when a load() returns { notFound: true }. */
export const notFoundPage = 'not-found';

/** Renders each worker runs before it takes traffic (JIT warm-up). */
export const warmup = [
  { page: 'home', url: '/', params: {} },
  { page: 'product', url: '/products/1', params: { id: '1' } },
  { page: 'product', url: '/products/500', params: { id: '500' } },
  { page: 'not-found', url: '/no-such-page', params: {} },
  // Streamed as a visitor's is, its reviews arriving after the shell.
  { page: 'product-reviews', url: '/products/1/reviews', params: { id: '1' }, stream: true, deferred: { reviews: reviewsOf({ id: 1 }) } },
  { island: 'FeaturedProducts', props: { products: [{ id: 1, name: 'Warm-up', price: '19.99 USD' }] } },
  { island: 'CartSummary', props: { user: 'warm-up', items: 0 } },
];
