'use client';
// The demo's own pages, unchanged: they hold state (the cart counter), so in the app router
// they are client components, server-rendered and then hydrated, as the demo's are.
export { Home } from '../../../../app/src/pages/Home.jsx';
export { NotFound } from '../../../../app/src/pages/NotFound.jsx';
export { Product } from '../../../../app/src/pages/Product.jsx';
export { ProductReviews } from '../../../../app/src/pages/ProductReviews.jsx';
