// The types of sidecar-ssr-renderer/client (index.js): an app's own strict TypeScript or
// jsconfig checks its calls against them, and never this package's JavaScript.
import type { App } from '../src/app-contract.js';

export type { App, LoadContext, LoadResult, Page } from '../src/app-contract.js';

/**
 * Reads the edge's `__SSR_DATA__` and brings `#root` to life: hydrates the server's markup,
 * renders a Go loader's props into an empty root, or runs the page's load() here. In a
 * document without `__SSR_DATA__` (a Go server's own template), brings each
 * `[data-ssr-island]` root to life instead, as a React root of its own.
 */
export function start(app: App): void;
