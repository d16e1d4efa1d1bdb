// The quarantine's bookkeeping, on a fake clock and without workers: deaths
// count only within the window, a sentence ends after its duration, memory
// stays bounded, and quarantine_after 0 turns it off. The render key is
// stable and names exactly what is rendered.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Quarantine, islandKey, renderKey } from '../src/serve/quarantine.js';

const MINUTE = 60_000;

/** @param {Partial<import('../src/serve/quarantine.js').QuarantineOptions>} [options] */
function setup(options = {}) {
  const clock = { now: 1_000_000 };
  const q = new Quarantine({ after: 2, windowMs: MINUTE, durationMs: 5 * MINUTE, now: () => clock.now, ...options });
  return { q, clock };
}

test('deaths within the window quarantine the key; others are untouched', () => {
  const { q, clock } = setup();
  assert.equal(q.recordDeath('a'), undefined, 'one death is not enough');
  assert.equal(q.check('a'), undefined);
  clock.now += MINUTE - 1;
  const sentence = q.recordDeath('a');
  assert.deepEqual(sentence, { deaths: 2, since: clock.now, until: clock.now + 5 * MINUTE });
  assert.deepEqual(q.check('a'), sentence);
  assert.equal(q.check('b'), undefined);
  assert.equal(q.size, 1);
  assert.equal(q.tracked, 0, 'a quarantined key leaves the death list');
});

test('a suspect (one of several renders on a worker out of memory) counts only once it is in two such deaths', () => {
  const { q, clock } = setup({ after: 3 });
  assert.equal(q.recordDeath('a', { suspect: true }), undefined);
  assert.equal(q.tracked, 0, 'one suspect death is no death yet');
  clock.now += MINUTE + 1;
  assert.equal(q.recordDeath('a', { suspect: true }), undefined, 'the first left the window: a suspect again');
  assert.equal(q.tracked, 0);
  clock.now += 1000;
  assert.equal(q.recordDeath('a', { suspect: true }), undefined, 'in two: both count, two of three');
  assert.equal(q.tracked, 1);
  assert.deepEqual(q.recordDeath('a'), { deaths: 3, since: clock.now, until: clock.now + 5 * MINUTE });
  assert.equal(q.recordDeath('b', { suspect: true }), undefined, 'another key is untouched');
});

test('deaths further apart than the window do not add up', () => {
  const { q, clock } = setup();
  q.recordDeath('a');
  clock.now += MINUTE;
  assert.equal(q.recordDeath('a'), undefined);
  clock.now += MINUTE + 1;
  assert.equal(q.recordDeath('a'), undefined);
  assert.equal(q.check('a'), undefined);
  clock.now += 1000;
  assert.ok(q.recordDeath('a'), 'two deaths 1 s apart');
});

test('the sentence ends after its duration, and the count starts again', () => {
  const { q, clock } = setup({ after: 3 });
  for (let i = 0; i < 3; i++) q.recordDeath('a');
  const sentence = /** @type {import('../src/serve/quarantine.js').Sentence} */ (q.check('a'));
  assert.equal(sentence.deaths, 3);
  // A render of it already running when it entered quarantine dies too.
  assert.equal(q.recordDeath('a'), undefined);
  assert.equal(q.check('a')?.deaths, 4);
  clock.now += 5 * MINUTE - 1;
  assert.ok(q.check('a'), 'still quarantined 1 ms before the end');
  clock.now += 1;
  assert.equal(q.check('a'), undefined);
  assert.equal(q.size, 0);
  assert.equal(q.recordDeath('a'), undefined, 'released: the next death is the first again');
  assert.equal(q.recordDeath('a'), undefined);
  assert.ok(q.recordDeath('a'));
});

test('memory is bounded: the key whose last death is oldest goes first', () => {
  const { q, clock } = setup({ after: 3, maxTracked: 3 });
  for (const key of ['a', 'b', 'c', 'a']) {
    clock.now += 1;
    q.recordDeath(key);
  }
  clock.now += 1;
  q.recordDeath('d');
  assert.equal(q.tracked, 3);
  clock.now += 1;
  assert.ok(q.recordDeath('a'), 'a, whose second death was recent, was kept: its third quarantines it');
  clock.now += 1;
  assert.equal(q.recordDeath('b'), undefined, 'b was dropped for d');
  clock.now += 1;
  assert.equal(q.recordDeath('b'), undefined, 'b has two deaths now, not three');
});

test('deaths that left the window are dropped', () => {
  const { q, clock } = setup();
  q.recordDeath('a');
  q.recordDeath('b');
  clock.now += MINUTE + 1;
  q.recordDeath('c');
  assert.equal(q.tracked, 1);
});

test('memory is bounded: the sentence that ends first makes room', () => {
  const { q, clock } = setup({ after: 1, maxQuarantined: 2 });
  for (const key of ['x', 'y', 'z']) {
    clock.now += 1;
    assert.ok(q.recordDeath(key));
  }
  assert.equal(q.size, 2);
  assert.equal(q.check('x'), undefined);
  assert.ok(q.check('y'));
  assert.ok(q.check('z'));
});

test('the default bounds: 1000 keys with deaths, 100 in quarantine', () => {
  const { q, clock } = setup();
  for (let i = 0; i < 2500; i++) {
    clock.now += 1;
    q.recordDeath(`k${i}`);
  }
  assert.equal(q.tracked, 1000);
  for (let i = 0; i < 500; i++) {
    clock.now += 1;
    q.recordDeath(`p${i}`);
    q.recordDeath(`p${i}`);
  }
  assert.equal(q.size, 100);
  assert.ok(q.check('p499'));
  assert.equal(q.check('p399'), undefined);
});

test('quarantine_after 0: off', () => {
  const { q } = setup({ after: 0 });
  assert.equal(q.enabled, false);
  for (let i = 0; i < 10; i++) assert.equal(q.recordDeath('a'), undefined);
  assert.equal(q.check('a'), undefined);
  assert.equal(q.size, 0);
  assert.equal(q.tracked, 0);
});

test('renderKey: the same render, the same key; anything rendered differently, another', () => {
  const base = { page: 'product', url: '/p/1?x=1', params: { id: '1' }, variants: { lang: 'en', ab: 'b' } };
  const key = renderKey(base);
  assert.match(key, /^[\w-]{43}$/, 'a sha256, whatever the URL length');
  assert.equal(renderKey({ ...base, variants: { ab: 'b', lang: 'en' } }), key, 'variants in another order');
  assert.equal(renderKey({ ...base, propsJson: new Uint8Array(0) }), key, 'empty props_json is no props');
  const props = renderKey({ ...base, propsJson: Buffer.from('{"a":1}') });
  assert.equal(renderKey({ ...base, propsJson: Buffer.from('{"a":1}') }), props);
  const others = [
    { ...base, page: 'home' },
    { ...base, url: '/p/1?x=2' },
    { ...base, params: { id: '2' } },
    { ...base, variants: { lang: 'de', ab: 'b' } },
    { ...base, variants: { lang: 'en' } },
    { ...base, propsJson: Buffer.from('{"a":2}') },
  ];
  const keys = new Set([key, props, ...others.map(renderKey)]);
  assert.equal(keys.size, others.length + 2);
});

test("renderKey of an island: its name and props, whichever page it is on", () => {
  const island = { page: 'island:Cart', island: 'Cart', url: '/a', params: {}, variants: {}, propsJson: Buffer.from('{"n":1}') };
  const key = renderKey(island);
  assert.equal(renderKey({ ...island, url: '/b' }), key);
  assert.notEqual(renderKey({ ...island, propsJson: Buffer.from('{"n":2}') }), key);
  assert.notEqual(renderKey({ ...island, page: 'island:Menu', island: 'Menu' }), key);
  assert.equal(islandKey({ name: 'Cart', propsJson: island.propsJson }), key, 'what RenderIslands checks before a batch');
});

test('renderKey of islands rendered together: their keys, in order, on whichever page', () => {
  const cart = { name: 'Cart', propsJson: Buffer.from('{"n":1}') };
  const menu = { name: 'Menu' };
  const batch = { page: 'island:*', url: '/a', params: {}, variants: {}, islands: [cart, menu] };
  const key = renderKey(batch);
  assert.equal(renderKey({ ...batch, url: '/b' }), key);
  assert.equal(renderKey({ ...batch, islands: [cart, { name: 'Menu', propsJson: new Uint8Array(0) }] }), key, 'empty props_json is no props');
  const others = [[menu, cart], [cart], [cart, menu, menu], [cart, { name: 'Menu', propsJson: Buffer.from('{}') }]];
  const keys = new Set([key, islandKey(cart), ...others.map((islands) => renderKey({ ...batch, islands }))]);
  assert.equal(keys.size, others.length + 2);
});
