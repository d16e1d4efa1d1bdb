// The demo's head functions (app/src/pages: homeHead, productHead, notFoundHead) as React
// Router meta descriptors: the same titles and descriptions.

export function homeMeta({ loaderData }) {
  const page = loaderData?.page ?? 1;
  return [
    { title: `Sidecar Shop: all products${page > 1 ? ` (page ${page})` : ''}` },
    {
      name: 'description',
      content: 'A demo shop rendered on the server by sidecar-ssr: a hundred products per page, hydrated in the browser.',
    },
  ];
}

export function productMeta({ loaderData }) {
  const product = loaderData?.product;
  if (!product) return [{ title: 'Sidecar Shop' }];
  return [{ title: `${product.name} | Sidecar Shop` }, { name: 'description', content: product.description }];
}

export const notFoundMeta = [
  { title: 'Page not found | Sidecar Shop' },
  { name: 'description', content: 'This page does not exist.' },
];
