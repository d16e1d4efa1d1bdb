// A deterministic product catalog. Every product is computed from its id with a
// seeded PRNG, so the server (in a worker) and the browser (CSR fallback) compute
// exactly the same data for the same route: no database, no network, no clock.

export const MIN_ID = 1;
export const MAX_ID = 1000;
export const PAGE_SIZE = 100;
export const PAGE_COUNT = Math.ceil((MAX_ID - MIN_ID + 1) / PAGE_SIZE);

/** mulberry32: a tiny 32-bit seeded PRNG. Returns floats in [0, 1). */
export function mulberry32(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ADJECTIVES = [
  'Sturdy', 'Compact', 'Featherlight', 'Classic', 'Weatherproof', 'Handcrafted', 'Modular',
  'Everyday', 'Vintage', 'Ergonomic', 'Foldable', 'Insulated', 'Recycled', 'Deluxe', 'Minimal',
  'Rugged', 'Silent', 'Bright', 'Cozy', 'Nimble',
];
const MATERIALS = [
  'Oak', 'Steel', 'Linen', 'Ceramic', 'Bamboo', 'Wool', 'Copper', 'Canvas', 'Walnut', 'Glass',
  'Leather', 'Cotton', 'Granite', 'Aluminium', 'Cork',
];
const NOUNS = [
  'Desk Lamp', 'Backpack', 'Teapot', 'Notebook', 'Headphones', 'Water Bottle', 'Chair',
  'Wall Clock', 'Blanket', 'Mug', 'Bike Light', 'Plant Pot', 'Pen Set', 'Tote Bag', 'Speaker',
  'Cutting Board', 'Umbrella', 'Wallet', 'Lantern', 'Kettle',
];
const BENEFITS = [
  'built to last for years', 'easy to clean', 'perfect for small spaces', 'a favourite gift',
  'designed for daily use', 'made in small batches', 'tested by our team', 'light enough to carry',
  'quiet and efficient', 'kind to the planet',
];
const DETAILS = [
  'Each piece is checked by hand before it leaves the workshop',
  'Comes with a two-year warranty and free returns within 30 days',
  'Ships in plastic-free packaging that you can compost at home',
  'Designed in Lisbon and assembled by a family business',
  'Pairs well with the rest of the collection',
  'Spare parts are available for as long as we sell it',
  'Wipe with a damp cloth; no special care needed',
  'Reviewers love how it looks after a year of use',
];
const BRANDS = ['Northwind', 'Alder & Co', 'Fieldnote', 'Kestrel', 'Lumen Works', 'Tidewater', 'Oakhurst', 'Paper Crane'];
const TAGS = [
  'new', 'bestseller', 'eco', 'gift', 'home', 'office', 'outdoor', 'travel', 'kitchen', 'sale',
  'limited', 'handmade',
];

function pick(rand, list) {
  return list[Math.floor(rand() * list.length)];
}

/** Integer in [min, max]. */
function between(rand, min, max) {
  return min + Math.floor(rand() * (max - min + 1));
}

/** True when `id` is an integer id of the catalog. */
export function isValidId(id) {
  return Number.isInteger(id) && id >= MIN_ID && id <= MAX_ID;
}

/**
 * Parses a route parameter into a product id: only canonical decimal integers
 * ("42", not "042", "4.2", "42abc" or " 42") within MIN_ID..MAX_ID. Returns null otherwise.
 */
export function parseId(param) {
  if (typeof param !== 'string' || !/^[1-9][0-9]{0,5}$/.test(param)) return null;
  const id = Number(param);
  return isValidId(id) ? id : null;
}

/** The product with this id (the same object contents on every call and every machine). */
export function getProduct(id) {
  if (!isValidId(id)) throw new RangeError(`no product ${id}`);
  const rand = mulberry32(id * 2654435761);
  const adjective = pick(rand, ADJECTIVES);
  const material = pick(rand, MATERIALS);
  const noun = pick(rand, NOUNS);
  const benefit = pick(rand, BENEFITS);
  const detail = pick(rand, DETAILS);
  const brand = pick(rand, BRANDS);
  const tags = [];
  const tagCount = between(rand, 2, 4);
  while (tags.length < tagCount) {
    const tag = pick(rand, TAGS);
    if (!tags.includes(tag)) tags.push(tag);
  }
  const priceCents = between(rand, 4, 400) * 100 + pick(rand, [0, 49, 95, 99]);
  return {
    id,
    sku: `SSR-${String(id).padStart(6, '0')}`,
    name: `${adjective} ${material} ${noun}`,
    brand,
    description: `${/^[AEIOU]/.test(adjective) ? 'An' : 'A'} ${adjective.toLowerCase()} ${noun.toLowerCase()} in ${material.toLowerCase()}, ${benefit}. ${detail}.`,
    priceCents,
    // A "was" price for products on sale, null otherwise.
    listPriceCents: tags.includes('sale') ? Math.round((priceCents * 1.25) / 100) * 100 + 99 : null,
    currency: 'USD',
    stock: between(rand, 0, 120),
    shipsInDays: between(rand, 1, 10),
    // One decimal place, kept as a number (4.3), so JSON and rendering agree.
    rating: between(rand, 25, 50) / 10,
    reviewCount: between(rand, 0, 2500),
    tags,
    color: `hsl(${between(rand, 0, 359)} ${between(rand, 35, 75)}% ${between(rand, 55, 80)}%)`,
  };
}

/** The products of one listing page (1-based), PAGE_SIZE per page. */
export function listProducts(page = 1) {
  const first = MIN_ID + (page - 1) * PAGE_SIZE;
  const last = Math.min(first + PAGE_SIZE - 1, MAX_ID);
  const products = [];
  for (let id = first; id <= last; id++) products.push(getProduct(id));
  return products;
}

/** `count` other products, chosen deterministically from `id`. */
export function relatedProducts(id, count = 8) {
  const rand = mulberry32(id ^ 0x5bd1e995);
  const ids = [];
  while (ids.length < count) {
    const other = between(rand, MIN_ID, MAX_ID);
    if (other !== id && !ids.includes(other)) ids.push(other);
  }
  return ids.map(getProduct);
}
