// Product reviews, the demo's slow data: the product page that streams
// (ProductReviews.jsx) shows them in a Suspense boundary. The reviews are computed from the
// product, like the rest of the catalog, so the browser hydrates them from the same values;
// only their arrival on the server is slow, as a real reviews service would be. They have
// the Go shop's type (catalog.Review), which its reviews page sends as a deferred value.
//
// On the server they arrive after SSR_DEMO_REVIEWS_DELAY_MS (default 300 ms), or, when
// SSR_DEMO_REVIEWS_URL is set, once that URL answers: the end-to-end tests hold the answer
// back to show the shell arriving first, and release it when they choose.

/** @import { Review } from './props.gen.js' */

const AUTHORS = ['Ada', 'Grace', 'Linus', 'Ken', 'Barbara', 'Edsger', 'Margaret', 'Dennis'];
const TEXTS = [
  'Exactly as described, and it arrived early.',
  'Solid build; I would buy it again.',
  'Good value for the price.',
  'The colour is a little darker than in the photo.',
  'Works well, though the manual could be clearer.',
];

/**
 * @param {{id: number}} product
 * @returns {Review[]}
 */
export function reviewsOf(product) {
  const reviews = [];
  for (let i = 0; i < 3; i++) {
    const n = product.id * 7 + i * 3;
    reviews.push({ author: AUTHORS[n % AUTHORS.length], stars: 3 + (n % 3), text: TEXTS[n % TEXTS.length] });
  }
  return reviews;
}

/**
 * One promise per product object, so that React finds the same one each time it retries the
 * suspended component. In the browser it is already fulfilled (React's use() then reads it
 * without suspending), so hydration matches the server's markup at once.
 * @type {WeakMap<object, Promise<Review[]>>}
 */
const pending = new WeakMap();

/**
 * @param {{id: number}} product
 * @returns {Promise<Review[]>}
 */
export function reviewsResource(product) {
  let promise = pending.get(product);
  if (!promise) {
    promise = typeof window === 'undefined' ? arrive(product) : fulfilled(reviewsOf(product));
    pending.set(product, promise);
  }
  return promise;
}

/** @param {{id: number}} product */
async function arrive(product) {
  const env = globalThis.process?.env ?? {};
  if (env.SSR_DEMO_REVIEWS_URL) {
    const res = await fetch(`${env.SSR_DEMO_REVIEWS_URL}?product=${product.id}`);
    await res.arrayBuffer();
  } else {
    await new Promise((resolve) => setTimeout(resolve, Number(env.SSR_DEMO_REVIEWS_DELAY_MS ?? 300)));
  }
  return reviewsOf(product);
}

/**
 * @template T
 * @param {T} value
 * @returns {Promise<T>}
 */
function fulfilled(value) {
  return Object.assign(Promise.resolve(value), { status: 'fulfilled', value });
}
