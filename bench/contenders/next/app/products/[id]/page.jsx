import { notFound } from 'next/navigation';
import { getProduct } from '../../../lib/api.js';
import { Product } from '../../../lib/demo.jsx';
import { productMetadata } from '../../../lib/head.js';

export const dynamic = 'force-dynamic';

export async function generateMetadata({ params }) {
  const { id } = await params;
  return productMetadata(await getProduct(id));
}

export default async function Page({ params }) {
  const { id } = await params;
  const props = await getProduct(id);
  if (!props) notFound();
  return <Product {...props} />;
}
