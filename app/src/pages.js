// The page registry, shared by the server entry (server.js) and the client entry
// (client.jsx). The edge's routes refer to pages by these names.
import { Home, homeHead, loadHome } from './pages/Home.jsx';
import { NotFound, notFoundHead } from './pages/NotFound.jsx';
import { Product, loadProduct, productHead } from './pages/Product.jsx';

export const pages = {
  home: { component: Home, load: loadHome, head: homeHead },
  product: { component: Product, load: loadProduct, head: productHead },
  'not-found': { component: NotFound, head: notFoundHead },
};

/** Rendered (status 404) when a load() returns { notFound: true }. */
export const notFoundPage = 'not-found';

/** Renders each worker runs before it takes traffic (JIT warm-up). */
export const warmup = [
  { page: 'home', url: '/', params: {} },
  { page: 'product', url: '/products/1', params: { id: '1' } },
  { page: 'product', url: '/products/500', params: { id: '500' } },
  { page: 'not-found', url: '/no-such-page', params: {} },
];
