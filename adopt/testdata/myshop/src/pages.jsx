// myshop's React pages (docs/app-contract.md): the Go server names them, its loaders give
// their props. Built by `npx sidecar-ssr-build --pages src/pages.jsx --outdir dist`.
import { useState } from 'react';
import './styles.css';

function Order({ order }) {
  const [clicks, setClicks] = useState(0);
  return (
    <main className="order">
      <h1>{`Order #${order.id}`}</h1>
      <p data-testid="item">{order.item}</p>
      <button type="button" data-testid="click" onClick={() => setClicks((n) => n + 1)}>
        Clicked <span data-testid="count">{clicks}</span> times
      </button>
    </main>
  );
}

function NotFound() {
  return (
    <main className="not-found">
      <h1>No such order</h1>
      <a href="/orders/1">Your first order</a>
    </main>
  );
}

export const pages = {
  order: { component: Order, head: ({ order }) => <title>{`Order #${order.id}`}</title> },
  'not-found': { component: NotFound, head: () => <title>Not found</title> },
};

export const notFoundPage = 'not-found';

export const warmup = [
  { page: 'order', url: '/orders/0', params: { id: '0' }, props: { order: { id: 0, item: 'warm' } } },
  { page: 'not-found', url: '/no-such-order', params: {} },
];
