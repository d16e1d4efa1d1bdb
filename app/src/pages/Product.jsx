import { useState } from 'react';
import { getProduct, parseId, relatedProducts } from '../catalog.js';
import { Header } from '../components/Header.jsx';
import { Price } from '../components/Price.jsx';
import { AddToCart, Availability, ProductCard, Swatch, TagList } from '../components/ProductCard.jsx';
import { Rating } from '../components/Rating.jsx';

/** @import { ProductProps } from '../props.gen.js' */

/**
 * @param {{params?: Record<string, string>}} ctx
 * @returns {{props: ProductProps} | {notFound: true}}
 */
export function loadProduct({ params }) {
  const id = parseId(params?.id);
  if (id === null) return { notFound: true };
  return { props: { product: getProduct(id), related: relatedProducts(id, 8) } };
}

/** @param {Partial<ProductProps>} [props] */
export function productHead({ product } = {}) {
  if (!product) return <title>Sidecar Shop</title>;
  return (
    <>
      <title>{`${product.name} | Sidecar Shop`}</title>
      <meta name="description" content={product.description} />
    </>
  );
}

/** @param {ProductProps} props the Go server's productProps */
export function Product({ product, related = [] }) {
  const [cartCount, setCartCount] = useState(0);
  const add = () => setCartCount((n) => n + 1);
  return (
    <>
      <Header cartCount={cartCount} />
      <main className="product">
        <article className="product-detail" data-product-id={product.id}>
          <Swatch color={product.color} label={product.name} large />
          <div className="product-info">
            <p className="product-brand">{product.brand}</p>
            <h1>{product.name}</h1>
            <p className="product-description">{product.description}</p>
            <Rating value={product.rating} count={product.reviewCount} />
            <Availability stock={product.stock} shipsInDays={product.shipsInDays} />
            <TagList tags={product.tags} />
            <p className="product-sku">SKU {product.sku}</p>
            <p className="product-buy">
              <Price cents={product.priceCents} listCents={product.listPriceCents} currency={product.currency} />
              <AddToCart onAdd={add} />
            </p>
          </div>
        </article>
        <h2>You may also like</h2>
        <section className="grid">
          {related.map((p) => (
            <ProductCard key={p.id} product={p} onAdd={add} />
          ))}
        </section>
      </main>
    </>
  );
}
