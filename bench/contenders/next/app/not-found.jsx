import { NotFound } from '../lib/demo.jsx';
import { notFoundMetadata } from '../lib/head.js';

export const metadata = notFoundMetadata;

export default function NotFoundPage() {
  return <NotFound />;
}
