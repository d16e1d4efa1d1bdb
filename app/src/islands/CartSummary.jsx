import { useState } from 'react';

/** @import { IslandProps } from '../props.gen.js' */

/**
 * The visitor's own cart. Its button counts in the browser alone, so a click that changes
 * the count shows that the island hydrated.
 * @param {IslandProps['CartSummary']} props the Go server's (shop/about.go, ssr.TypedIsland)
 */
export function CartSummary({ user, items }) {
  const [count, setCount] = useState(items);
  return (
    <section className="cart-summary" data-testid="cart">
      <p>
        Signed in as {user}: <span data-testid="cart-count">{count}</span> items in your cart
      </p>
      <button type="button" data-testid="cart-add" onClick={() => setCount((n) => n + 1)}>
        Add one
      </button>
    </section>
  );
}
