// Server entry of development builds (make dev): server.js's exports, and the shape of
// each page's props, generated from the Go types the shop registers its pages with. The
// renderer checks the props it receives against it and logs the first mismatch; a
// production bundle leaves it out, and the renderer never loads the check.
export * from './server.js';
export { default as propsSchema } from './props.gen.schema.json' with { type: 'json' };
