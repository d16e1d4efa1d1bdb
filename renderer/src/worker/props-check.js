// Development only: checks the props a page receives against the shape its Go type
// declares (the JSON Schema that ssr-types writes, exported by a development build of the
// app as `propsSchema`), and logs the first mismatch with the page and the field's path.
// worker.js imports this module only when the bundle has a propsSchema: a production
// bundle has none, so production never loads it (test/props-check.test.js).
import { threadId } from 'node:worker_threads';

/** @import { RenderTask } from '../threads/messages.js' */

/**
 * The keywords ssr-types writes, the only ones read here.
 * @typedef {object} Schema
 * @property {string} [$ref] `#/$defs/Name`
 * @property {Schema[]} [anyOf]
 * @property {'object' | 'array' | 'string' | 'number' | 'integer' | 'boolean' | 'null'} [type]
 * @property {Record<string, Schema>} [properties]
 * @property {string[]} [required]
 * @property {Schema | false} [additionalProperties]
 * @property {Schema} [items]
 * @property {Record<string, Schema>} [$defs]
 */

/**
 * @typedef {object} Mismatch
 * @property {string} path where, from `props`: `props.related[2].priceCents`
 * @property {string} problem
 */

/**
 * @typedef {object} Expected a value of the wrong type, kept apart so that the branches
 *   of an anyOf can say together what they expected
 * @property {string} path
 * @property {string[]} expected
 * @property {unknown} got
 */

/**
 * Returns the check of one render's props. It never throws: what it cannot read (no
 * props, props that are not JSON) is render-page.js's to report.
 * @param {unknown} schema the bundle's propsSchema
 * @param {(line: Record<string, unknown>) => void} [log] receives the mismatch's log line
 * @returns {(task: RenderTask) => void}
 */
export function propsChecker(schema, log = (line) => process.stdout.write(`${JSON.stringify(line)}\n`)) {
  const root = /** @type {Schema} */ (schema);
  return (task) => {
    const props = task.props ?? parse(task.propsJson);
    if (props === undefined) return;
    const mismatch = firstMismatch(root, task.page, props);
    if (!mismatch) return;
    log({
      level: 40, time: Date.now(), pid: process.pid, threadId, page: task.page, ...mismatch,
      msg: `props of page "${task.page}" do not match the type it declares: ${mismatch.path}: ${mismatch.problem}`,
    });
  };
}

/**
 * The first place where props differ from the shape `schema` declares for page, if it
 * declares one.
 * @param {Schema} schema
 * @param {string} page
 * @param {unknown} props
 * @returns {Mismatch | undefined}
 */
export function firstMismatch(schema, page, props) {
  const declared = schema?.properties;
  if (!declared || !Object.hasOwn(declared, page)) return undefined;
  const found = check(schema, declared[page], props, 'props');
  if (!found || !('expected' in found)) return found;
  return { path: found.path, problem: `expected ${found.expected.join(' or ')}, got ${describe(found.got)}` };
}

/**
 * @param {Schema} root
 * @param {Schema} schema
 * @param {unknown} value
 * @param {string} path
 * @returns {Mismatch | Expected | undefined}
 */
function check(root, schema, value, path) {
  if (schema.$ref !== undefined) return check(root, definition(root, schema.$ref), value, path);
  if (schema.anyOf) {
    /** @type {Array<Mismatch | Expected>} */
    const misses = [];
    for (const branch of schema.anyOf) {
      const miss = check(root, branch, value, path);
      if (!miss) return undefined;
      misses.push(miss);
    }
    // A value of a type no branch takes is one problem; one that a branch took and then
    // found wrong inside is that branch's.
    const inside = misses.find((miss) => !('expected' in miss) || miss.path !== path);
    if (inside) return inside;
    return { path, expected: misses.flatMap((miss) => /** @type {Expected} */ (miss).expected), got: value };
  }
  if (schema.type !== undefined && !isType(value, schema.type)) return { path, expected: [schema.type], got: value };
  if (Array.isArray(value)) {
    if (!schema.items) return undefined;
    for (let i = 0; i < value.length; i++) {
      const miss = check(root, schema.items, value[i], `${path}[${i}]`);
      if (miss) return miss;
    }
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const object = /** @type {Record<string, unknown>} */ (value);
  const properties = schema.properties ?? {};
  for (const [key, declared] of Object.entries(properties)) {
    if (!Object.hasOwn(object, key)) {
      if (schema.required?.includes(key)) return { path: member(path, key), problem: 'missing' };
      continue;
    }
    const miss = check(root, declared, object[key], member(path, key));
    if (miss) return miss;
  }
  const extra = schema.additionalProperties;
  if (extra === undefined) return undefined;
  for (const key of Object.keys(object)) {
    if (Object.hasOwn(properties, key)) continue;
    if (extra === false) return { path: member(path, key), problem: 'not declared by the type' };
    const miss = check(root, extra, object[key], member(path, key));
    if (miss) return miss;
  }
  return undefined;
}

/**
 * @param {Schema} root
 * @param {string} ref
 * @returns {Schema}
 */
function definition(root, ref) {
  const name = ref.startsWith('#/$defs/') ? ref.slice('#/$defs/'.length) : undefined;
  if (name === undefined || !root.$defs || !Object.hasOwn(root.$defs, name)) return {};
  return root.$defs[name];
}

/**
 * @param {unknown} value
 * @param {NonNullable<Schema['type']>} type
 */
function isType(value, type) {
  switch (type) {
    case 'null': return value === null;
    case 'array': return Array.isArray(value);
    case 'object': return typeof value === 'object' && value !== null && !Array.isArray(value);
    case 'integer': return Number.isInteger(value);
    default: return typeof value === type;
  }
}

/** @param {unknown} value */
function describe(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  const shown = JSON.stringify(value);
  return `${typeof value} ${shown.length > 40 ? `${shown.slice(0, 40)}...` : shown}`;
}

/**
 * @param {string} path
 * @param {string} key
 */
function member(path, key) {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/**
 * @param {Uint8Array | undefined} bytes
 * @returns {unknown}
 */
function parse(bytes) {
  if (!bytes || bytes.byteLength === 0) return undefined;
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
}
