// Server entry: the export surface of docs/app-contract.md. React is bundled in,
// so the renderer creates and renders elements with the React that defines them.
export { createElement } from 'react';
export { renderToString, renderToStaticMarkup, renderToPipeableStream } from 'react-dom/server';
export { pages, islands, notFoundPage, warmup } from './pages.js';
