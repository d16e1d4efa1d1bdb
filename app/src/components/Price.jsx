// Explicit locale and currency: server and browser must produce the same string,
// whatever the machine's default locale is.
const formatters = new Map();

function formatter(currency) {
  let f = formatters.get(currency);
  if (!f) {
    f = new Intl.NumberFormat('en-US', { style: 'currency', currency });
    formatters.set(currency, f);
  }
  return f;
}

/**
 * @param {number} cents
 * @param {string} [currency]
 */
export function formatPrice(cents, currency = 'USD') {
  return formatter(currency).format(cents / 100);
}

/**
 * The price, and the struck-through "was" price when the product is on sale.
 * @param {{cents: number, listCents?: number | null, currency?: string}} props
 */
export function Price({ cents, listCents = null, currency = 'USD' }) {
  return (
    <span className="price" data-currency={currency}>
      {listCents ? (
        <del className="price-was" aria-label={`was ${formatPrice(listCents, currency)}`}>
          {formatPrice(listCents, currency)}
        </del>
      ) : null}
      <span className="price-now">{formatPrice(cents, currency)}</span>
    </span>
  );
}
