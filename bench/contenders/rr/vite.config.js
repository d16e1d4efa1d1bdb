import { reactRouter } from '@react-router/dev/vite';
import { defineConfig } from 'vite';

export default defineConfig({
  plugins: [reactRouter()],
  resolve: {
    // The demo's components (../../../app/src) import 'react', which from there would resolve
    // to app/node_modules/react: a second React in the bundle, and hooks that fail. The
    // reactRouter() plugin dedupes these already (checked with source maps: one React with or
    // without this line); said here so that it does not depend on the plugin's defaults.
    dedupe: ['react', 'react-dom'],
  },
});
