/** @import { IslandProps } from '../props.gen.js' */

/**
 * A few products, the same for every visitor: the Go server keeps its HTML in its cache.
 * @param {IslandProps['FeaturedProducts']} props the Go server's (shop/about.go,
 *   ssr.TypedIsland); `price` as it formats it ("19.99 USD")
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
