import { Suspense, use } from 'react';
import { Unavailable } from '../components/Unavailable.jsx';
import { reviewsResource } from '../reviews.js';
import { Product } from './Product.jsx';

/** @import { CartLine as CartLineValue, PageComponentProps, PageProps, Review } from '../props.gen.js' */

/**
 * The page's props. From a Go shop, what its component receives there: the product's props
 * and, in `deferred`, the reviews (docs/go.md, "Deferred values"). From the app's own
 * load(), the same props without `deferred`: the page then gets its reviews itself
 * (reviews.js).
 * @typedef {PageProps['product-reviews'] & Partial<Pick<PageComponentProps<'product-reviews'>, 'deferred'>>} ProductReviewsProps
 */

/**
 * The product page with its reviews in a Suspense boundary: the page that streams (the
 * route's `stream: true`). The shell, the product itself, goes out at once; the reviews follow
 * when they arrive: the app's own (reviews.js), or the Go shop's deferred value. From the Go
 * shop, where the page is partially prerendered, the visitor's cart line is a boundary of
 * its own: the stored shell holds its fallback, each request its own line.
 * @param {ProductReviewsProps} props
 */
export function ProductReviews(props) {
  const cart = props.deferred?.cart;
  return (
    <>
      <Product {...props} />
      {cart && (
        // In an element of its own: react-dom postpones the whole shell for a boundary at
        // the page's root, outside every element.
        <aside className="product-cart" aria-label="Your cart">
          <Suspense fallback={<p className="cart-line" data-testid="cart-line-loading">Your cart…</p>}>
            <CartLine line={cart} />
          </Suspense>
        </aside>
      )}
      <section className="reviews" aria-labelledby="reviews-title">
        <h2 id="reviews-title">Reviews</h2>
        <Unavailable what="Reviews">
          <Suspense fallback={<p className="reviews-loading" data-testid="reviews-loading">Loading reviews…</p>}>
            <Reviews product={props.product} deferred={props.deferred?.reviews} />
          </Suspense>
        </Unavailable>
      </section>
    </>
  );
}

/**
 * The visitor's line for this product: theirs alone, never in the stored shell.
 * @param {{line: Promise<CartLineValue>}} props
 */
function CartLine({ line }) {
  const { user, quantity } = use(line);
  return (
    <p className="cart-line" data-testid="cart-line">
      {quantity > 0 ? `${user}, ${quantity} of these ${quantity === 1 ? 'is' : 'are'} in your cart` : `Not in your cart yet, ${user}`}
    </p>
  );
}

/** @param {{product: ProductReviewsProps['product'], deferred?: Promise<Review[]>}} props */
function Reviews({ product, deferred }) {
  const reviews = use(deferred ?? reviewsResource(product));
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
