import { Product } from '../../../../../app/src/pages/Product.jsx';
import { api } from '../api.server.js';
import { productMeta } from '../head.js';

export function loader({ params }) {
  return api(`/api/products/${encodeURIComponent(params.id)}`);
}

export const meta = productMeta;

export default function ProductRoute({ loaderData }) {
  return <Product {...loaderData} />;
}
