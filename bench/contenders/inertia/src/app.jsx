// The browser's entry: hydrates the server-rendered page (Inertia's client-side setup with
// SSR, hydrateRoot instead of createRoot).
import { createInertiaApp } from '@inertiajs/react';
import { hydrateRoot } from 'react-dom/client';
import '../../../../app/src/styles.css';
import { pages } from './pages.jsx';

createInertiaApp({
  resolve: (name) => pages[name],
  setup({ el, App, props }) {
    hydrateRoot(el, <App {...props} />);
  },
});
