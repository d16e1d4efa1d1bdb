// The Inertia pages: the demo app's own components (app/src/pages), each with its head
// function's tags in Inertia's <Head>, which is how an Inertia page sets its title.
import { Head } from '@inertiajs/react';
import { Fragment } from 'react';
import { Home as DemoHome, homeHead } from '../../../../app/src/pages/Home.jsx';
import { NotFound as DemoNotFound, notFoundHead } from '../../../../app/src/pages/NotFound.jsx';
import { Product as DemoProduct, productHead } from '../../../../app/src/pages/Product.jsx';

// <Head> reads its children with Children.toArray, which keeps a fragment whole (and then
// renders it as a tag named "Symbol(react.fragment)"): it gets the fragment's tags instead.
function headTags(element) {
  return element.type === Fragment ? element.props.children : element;
}

export function Home(props) {
  return (
    <>
      <Head>{headTags(homeHead(props))}</Head>
      <DemoHome {...props} />
    </>
  );
}

export function Product(props) {
  return (
    <>
      <Head>{headTags(productHead(props))}</Head>
      <DemoProduct {...props} />
    </>
  );
}

export function NotFound() {
  return (
    <>
      <Head>{headTags(notFoundHead())}</Head>
      <DemoNotFound />
    </>
  );
}

/** The pages by the component names the Go front sends. */
export const pages = { Home, Product, NotFound };
