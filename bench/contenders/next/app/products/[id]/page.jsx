import { notFound } from 'next/navigation';
import { getProduct } from '../../../lib/api.js';
import { Product } from '../../../lib/demo.jsx';
import { productPageMetadata } from '../../../lib/head.js';

export const dynamic = 'force-dynamic';

export const generateMetadata = productPageMetadata;

export default async function Page({ params }) {
  const { id } = await params;
  const props = await getProduct(id);
  if (!props) notFound();
  return <Product {...props} />;
}
