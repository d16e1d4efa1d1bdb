import { Price } from './Price.jsx';
import { Rating } from './Rating.jsx';

/** @import { Product } from '../props.gen.js' */

/**
 * A coloured block standing in for the product photo.
 * @param {{color: string, label: string, large?: boolean}} props
 */
export function Swatch({ color, label, large = false }) {
  return (
    <div
      className={large ? 'swatch swatch-large' : 'swatch'}
      style={{ backgroundColor: color }}
      role="img"
      aria-label={label}
    />
  );
}

/** @param {{tags: string[]}} props */
export function TagList({ tags }) {
  return (
    <ul className="tags">
      {tags.map((tag) => (
        <li key={tag} className={`tag tag-${tag}`}>
          {tag}
        </li>
      ))}
    </ul>
  );
}

/**
 * Stock and delivery, from the catalog's numbers (no clock: no delivery dates).
 * @param {{stock: number, shipsInDays: number}} props
 */
export function Availability({ stock, shipsInDays }) {
  let text = 'In stock';
  let level = 'ok';
  if (stock === 0) {
    text = 'Out of stock: back soon';
    level = 'none';
  } else if (stock < 10) {
    text = `Only ${stock} left`;
    level = 'low';
  }
  return (
    <p className={`availability availability-${level}`}>
      <span className="stock">{text}</span>
      <span className="shipping">
        {shipsInDays === 1 ? 'Ships tomorrow' : `Ships in ${shipsInDays} days`}
      </span>
    </p>
  );
}

/** @param {{onAdd: () => void}} props */
export function AddToCart({ onAdd }) {
  return (
    <button type="button" className="add-to-cart" data-testid="add-to-cart" onClick={onAdd}>
      Add to cart
    </button>
  );
}

/** @param {{product: Product, onAdd: (id: number) => void}} props */
export function ProductCard({ product, onAdd }) {
  const href = `/products/${product.id}`;
  return (
    <article className="card" data-product-id={product.id}>
      <a href={href} className="card-image">
        <Swatch color={product.color} label={product.name} />
      </a>
      <div className="card-body">
        <p className="card-brand">{product.brand}</p>
        <h2 className="card-title">
          <a href={href}>{product.name}</a>
        </h2>
        <p className="card-description">{product.description}</p>
        <Rating value={product.rating} count={product.reviewCount} />
        <Availability stock={product.stock} shipsInDays={product.shipsInDays} />
        <TagList tags={product.tags} />
      </div>
      <div className="card-footer">
        <Price cents={product.priceCents} listCents={product.listPriceCents} currency={product.currency} />
        <AddToCart onAdd={() => onAdd(product.id)} />
      </div>
    </article>
  );
}
