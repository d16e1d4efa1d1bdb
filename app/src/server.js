// Server entry: the export surface of docs/app-contract.md. React is bundled in,
// so the renderer creates and renders elements with the React that defines them.
export { createElement } from 'react';
export { renderToString, renderToStaticMarkup, renderToPipeableStream, resumeToPipeableStream } from 'react-dom/server';
// A partially prerendered page's shell: prerendered once, then resumed per request.
export { prerenderToNodeStream } from 'react-dom/static';
export { pages, islands, notFoundPage, warmup } from './pages.js';
