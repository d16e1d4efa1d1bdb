// myshop's React pages (docs/app-contract.md): the Go server names them, its loaders give
// their props, typed from Go (src/props.gen.d.ts, written by go generate). Built by
// `npx sidecar-ssr-build --pages src/pages.jsx --client src/client.jsx --outdir dist`.
import { Suspense, use, useState } from 'react';
import './styles.css';

/** @import { PageComponentProps, PageProps } from './props.gen.js' */

/** @param {PageComponentProps<'order'>} props */
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

/** @param {PageComponentProps<'tracking'>} props */
function Tracking({ order, deferred }) {
  return (
    <main className="tracking">
      <h1>{`Tracking order #${order.id}`}</h1>
      <Suspense fallback={<p data-testid="shipment">Looking for your parcel…</p>}>
        <ShipmentLine shipment={deferred.shipment} />
      </Suspense>
    </main>
  );
}

/** @param {{shipment: PageComponentProps<'tracking'>['deferred']['shipment']}} props */
function ShipmentLine({ shipment }) {
  const { carrier, eta } = use(shipment);
  return <p data-testid="shipment">{`${carrier} delivers it on ${eta}`}</p>;
}

function NotFound() {
  return (
    <main className="not-found">
      <h1>No such order</h1>
      <a href="/orders/1">Your first order</a>
    </main>
  );
}

/** @param {PageProps['order']} props */
const orderTitle = ({ order }) => <title>{`Order #${order.id}`}</title>;

export const pages = {
  order: { component: Order, head: orderTitle },
  tracking: { component: Tracking, head: orderTitle },
  'not-found': { component: NotFound, head: () => <title>Not found</title> },
};

/**
 * Islands the Go server's own templates show (the receipt page).
 * @param {{item: string, left: number}} props
 */
function Stock({ item, left }) {
  const [reserved, setReserved] = useState(0);
  return (
    <p className="stock" data-testid="stock">
      {`${left - reserved} more ${item} in stock `}
      <button type="button" data-testid="reserve" disabled={reserved >= left} onClick={() => setReserved((n) => n + 1)}>
        Reserve one
      </button>
    </p>
  );
}

/**
 * The visitor's own greeting (the Gin shop's receipt: gin.test.js), rendered for each page.
 * @param {{name: string}} props
 */
function Greeting({ name }) {
  return <p className="greeting" data-testid="greeting">{`Hello, ${name}!`}</p>;
}

export const islands = { Stock, Greeting };

export const notFoundPage = 'not-found';

export const warmup = [
  { page: 'order', url: '/orders/0', params: { id: '0' }, props: { order: { id: 0, item: 'warm' } } },
  { page: 'not-found', url: '/no-such-order', params: {} },
];
