import { Links, Meta, Outlet, Scripts, ScrollRestoration, isRouteErrorResponse } from 'react-router';
import { NotFound } from '../../../../app/src/pages/NotFound.jsx';
import { notFoundMeta } from './head.js';
import '../../../../app/src/styles.css';

// The demo's document: the page's markup right after <div id="root">, as the edge's shell has it.
export function Layout({ children }) {
  return (
    <html lang="en">
      <head>
        <meta charSet="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <Meta />
        <Links />
      </head>
      <body>
        <div id="root">{children}</div>
        <ScrollRestoration />
        <Scripts />
      </body>
    </html>
  );
}

export default function App() {
  return <Outlet />;
}

export function meta({ error }) {
  return isRouteErrorResponse(error) && error.status === 404 ? notFoundMeta : [];
}

// An unknown route or product (the shop's API said 404) gets the demo's not-found page.
export function ErrorBoundary({ error }) {
  if (isRouteErrorResponse(error) && error.status === 404) return <NotFound />;
  return (
    <main>
      <h1>Something went wrong</h1>
    </main>
  );
}
