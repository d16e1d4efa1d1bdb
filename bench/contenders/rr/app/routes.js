import { index, route } from '@react-router/dev/routes';

export default [
  index('routes/home.jsx'),
  route('products/:id', 'routes/product.jsx'),
  route('products/:id/reviews', 'routes/product-reviews.jsx'),
];
