/**
 * A few products, the same for every visitor: the Go server keeps its HTML in its cache.
 * @param {{products: Array<{id: number, name: string, price: string}>}} props `price` as
 *   the server formats it ("19.99 USD")
 */
export function FeaturedProducts({ products }) {
  return (
    <ul className="featured" data-testid="featured">
      {products.map((product) => (
        <li key={product.id}>
          <a href={`/products/${product.id}`}>{product.name}</a> <span className="price">{product.price}</span>
        </li>
      ))}
    </ul>
  );
}
