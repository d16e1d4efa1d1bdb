import { useState } from 'react';
import { PAGE_COUNT, listProducts } from '../catalog.js';
import { Header } from '../components/Header.jsx';
import { ProductCard } from '../components/ProductCard.jsx';

/** @import { ListingProps } from '../props.gen.js' */

/** `?page=N` picks a listing page; anything else (missing, junk, out of range) is page 1. */
function listingPage(query) {
  const n = Number(query.page);
  return Number.isInteger(n) && n >= 1 && n <= PAGE_COUNT ? n : 1;
}

/**
 * @param {{query: Record<string, string>}} ctx
 * @returns {{props: ListingProps}}
 */
export function loadHome({ query }) {
  const page = listingPage(query);
  return { props: { page, pageCount: PAGE_COUNT, products: listProducts(page) } };
}

/** @param {Partial<ListingProps>} [props] */
export function homeHead({ page = 1 } = {}) {
  const suffix = page > 1 ? ` (page ${page})` : '';
  return (
    <>
      <title>{`Sidecar Shop: all products${suffix}`}</title>
      <meta
        name="description"
        content="A demo shop rendered on the server by sidecar-ssr: a hundred products per page, hydrated in the browser."
      />
    </>
  );
}

/** @param {{page: number, pageCount: number}} props */
function Pager({ page, pageCount }) {
  return (
    <nav className="pager" aria-label="Pages">
      {page > 1 ? <a href={page === 2 ? '/' : `/?page=${page - 1}`}>Previous</a> : null}
      <span>
        Page {page} of {pageCount}
      </span>
      {page < pageCount ? <a href={`/?page=${page + 1}`}>Next</a> : null}
    </nav>
  );
}

/** @param {ListingProps} props the Go server's catalog.ListingProps */
export function Home({ page = 1, pageCount = PAGE_COUNT, products = [] }) {
  const [cartCount, setCartCount] = useState(0);
  const add = () => setCartCount((n) => n + 1);
  return (
    <>
      <Header cartCount={cartCount} />
      <main className="home">
        <h1>All products</h1>
        <section className="grid">
          {products.map((product) => (
            <ProductCard key={product.id} product={product} onAdd={add} />
          ))}
        </section>
        <Pager page={page} pageCount={pageCount} />
      </main>
    </>
  );
}
