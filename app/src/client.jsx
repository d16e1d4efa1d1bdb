// Client entry. The edge writes the document (see docs/app-contract.md):
//   <div id="root">server HTML, or empty for the CSR fallback</div>
//   <script id="__SSR_DATA__" type="application/json">{"page", "url", "params", "props"?}</script>
// With props and server markup we hydrate; with props alone (a Go server computed them,
// the render failed) we render them from scratch; otherwise we load the data the page's
// own way (the demo computes it deterministically) and render from scratch.
import { createElement } from 'react';
import { createRoot, hydrateRoot } from 'react-dom/client';
import { notFoundPage, pages } from './pages.js';
import './styles.css';

/** The first value of each query parameter, as the renderer gives it to load(). */
function queryObject(search) {
  const query = {};
  for (const [key, value] of new URLSearchParams(search)) {
    if (!Object.hasOwn(query, key)) query[key] = value;
  }
  return query;
}

function readData() {
  const el = document.getElementById('__SSR_DATA__');
  return el ? JSON.parse(el.textContent) : {};
}

async function clientRender(root, data, name) {
  let page = pages[name];
  let props = data.props ?? {};
  if (page.load && !data.props) {
    const result =
      (await page.load({
        url: data.url ?? location.pathname + location.search,
        params: data.params ?? {},
        query: queryObject(location.search),
        variants: {},
        props: {},
      })) ?? {};
    if (result.redirect) {
      location.replace(result.redirect.location);
      return;
    }
    if (result.notFound) {
      page = pages[notFoundPage];
    } else {
      props = result.props ?? {};
    }
  }
  createRoot(root).render(createElement(page.component, props));
}

function main() {
  const data = readData();
  const name = Object.hasOwn(pages, data.page) ? data.page : notFoundPage;
  const root = document.getElementById('root');
  if (data.props && root.hasChildNodes()) {
    hydrateRoot(root, createElement(pages[name].component, data.props), {
      onRecoverableError(error, info) {
        // Hydration mismatches land here; the browser test watches the console.
        console.error('hydration error:', error, info?.componentStack ?? '');
      },
    });
  } else {
    clientRender(root, data, name).catch((error) => {
      console.error('client render failed:', error);
    });
  }
}

main();
