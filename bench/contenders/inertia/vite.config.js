import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Two builds, as Inertia's SSR docs teach: `vite build` (the browser's, with the manifest
// the Go front reads its script and stylesheet from, Vite's "backend integration") and
// `vite build --ssr` (the SSR server, run as `node dist/ssr/ssr.js`).
export default defineConfig(({ isSsrBuild }) => ({
  plugins: [react()],
  // The demo's pages live in app/src and import React from there; without dedupe they
  // would bring app/node_modules' copy beside this one's (two Reacts: hooks break).
  resolve: { dedupe: ['react', 'react-dom'] },
  build: isSsrBuild
    ? { outDir: 'dist/ssr', rolldownOptions: { input: 'src/ssr.jsx' } }
    : { outDir: 'dist/client', manifest: true, rolldownOptions: { input: 'src/app.jsx' } },
}));
