import { Suspense, use } from 'react';
import { reviewsResource } from '../reviews.js';
import { Product } from './Product.jsx';

/** @import { ProductProps } from '../props.gen.js' */

/**
 * The product page with its reviews in a Suspense boundary: the page that streams (the
 * route's `stream: true`). The shell, the product itself, goes out at once; the reviews follow
 * when they arrive.
 * @param {ProductProps} props
 */
export function ProductReviews(props) {
  return (
    <>
      <Product {...props} />
      <section className="reviews" aria-labelledby="reviews-title">
        <h2 id="reviews-title">Reviews</h2>
        <Suspense fallback={<p className="reviews-loading" data-testid="reviews-loading">Loading reviews…</p>}>
          <Reviews product={props.product} />
        </Suspense>
      </section>
    </>
  );
}

/** @param {{product: ProductProps['product']}} props */
function Reviews({ product }) {
  const reviews = use(reviewsResource(product));
  return (
    <ul className="review-list" data-testid="reviews">
      {reviews.map((r, i) => (
        <li key={i} className="review">
          <strong>{r.author}</strong> <span aria-label={`${r.stars} stars`}>{'\u2605'.repeat(r.stars)}</span>
          <p>{r.text}</p>
        </li>
      ))}
    </ul>
  );
}
