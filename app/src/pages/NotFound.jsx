import { Header } from '../components/Header.jsx';

// The status (404) is set by the renderer and the edge; the page only explains.
export function notFoundHead() {
  return (
    <>
      <title>Page not found | Sidecar Shop</title>
      <meta name="description" content="This page does not exist." />
    </>
  );
}

export function NotFound() {
  return (
    <>
      <Header cartCount={0} />
      <main className="not-found">
        <h1>Page not found</h1>
        <p>We looked everywhere, but there is nothing at this address.</p>
        <p>
          <a href="/">Back to all products</a>
        </p>
      </main>
    </>
  );
}
