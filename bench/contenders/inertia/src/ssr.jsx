// The SSR server's entry, as Inertia's docs write it: createServer answers POST /render
// with {head, body} for the page object the Go front sends.
import { createInertiaApp } from '@inertiajs/react';
import createServer from '@inertiajs/react/server';
import { renderToString } from 'react-dom/server';
import { pages } from './pages.jsx';

const port = Number(process.env.INERTIA_SSR_PORT || 13714);

createServer(
  (page) =>
    createInertiaApp({
      page,
      render: renderToString,
      resolve: (name) => pages[name],
      setup: ({ App, props }) => <App {...props} />,
    }),
  // Its default host is 0.0.0.0: only the Go front, on this machine, should reach it
  // (it also answers GET /shutdown to anyone).
  { port, host: '127.0.0.1' },
);
