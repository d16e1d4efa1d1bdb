// The app's side of the contract (docs/app-contract.md, "The pages"), as the worker runs it
// and the browser's client helper does: one declaration for both, and the types an app's
// own checks see (client/index.d.ts).

/** What a page's `load()` gets. */
export interface LoadContext {
  /** Path and query. */
  url: string;
  params: Record<string, string>;
  /** The first value of each query parameter. */
  query: Record<string, string>;
  /** The request variants the route declares. */
  variants: Record<string, string>;
  /** The caller's props (a Go loader's), frozen; `{}` when there are none. */
  props: Record<string, unknown>;
}

/** What a page's `load()` returns; every field is optional. */
export interface LoadResult {
  props?: Record<string, unknown>;
  status?: number;
  headers?: Record<string, string | string[]> | Array<[string, string] | { name: string; value: string }>;
  redirect?: { location: string; status?: number };
  notFound?: boolean;
  cache?: { maxAgeSeconds?: number; noStore?: boolean; tags?: string[] };
}

/** One page of the pages file. */
export interface Page {
  /** A React component (any: the renderer has no React types of its own). */
  component: any;
  load?: (ctx: LoadContext) => LoadResult | undefined | Promise<LoadResult | undefined>;
  /** props: what the page renders with (any: each page has its own). */
  head?: (props: any, ctx: LoadContext) => unknown;
}

/** The pages file's exports that the client helper's start() takes. */
export interface App {
  pages: Record<string, Page>;
  /** Rendered when a load() says notFound, and for a page name the app does not know. */
  notFoundPage?: string;
  /**
   * Rendered, with props {status}, for a page whose props did not arrive and that has no
   * load() to get them.
   */
  errorPage?: string;
  /**
   * Components by name (the pages file's `islands` export), for the islands of a Go
   * server's own templates: each is rendered with its props alone (no load(), no head).
   */
  islands?: Record<string, any>;
}
