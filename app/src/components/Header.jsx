/** Site header with the cart counter; the count lives in the page's state. */
/** @param {{cartCount?: number}} props */
export function Header({ cartCount = 0 }) {
  return (
    <header className="site-header">
      <a className="logo" href="/">
        Sidecar Shop
      </a>
      <nav className="site-nav" aria-label="Main">
        <a href="/">All products</a>
        <a href="/products/1">Product of the day</a>
      </nav>
      <div className="cart" aria-live="polite">
        Cart: <span data-testid="cart-count">{cartCount}</span>
      </div>
    </header>
  );
}
