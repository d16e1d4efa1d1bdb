// A renderer that cannot load its bundle must not start (and must say why).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { FIXTURE_BUNDLE, startRenderer, tempDir } from './helpers.js';

const THROWS_AT_IMPORT = fileURLToPath(new URL('./fixtures/throws-at-import.js', import.meta.url));

test('a bundle that throws at import fails the start with its message', async (t) => {
  await assert.rejects(startRenderer(t, { bundle: THROWS_AT_IMPORT }), (err) => {
    assert.match(/** @type {Error} */ (err).message, /^worker \d+ could not load the bundle: .*throws-at-import\.js: fixture: bundle threw at import$/);
    return true;
  });
});

test('a bundle whose lang is no language tag fails the start, saying so', async (t) => {
  const bundle = fileURLToPath(new URL('./fixtures/bad-lang-bundle.js', import.meta.url));
  await assert.rejects(startRenderer(t, { bundle }), (err) => {
    assert.match(/** @type {Error} */ (err).message, /could not load the bundle: .*bad-lang-bundle\.js: the bundle's lang must be a language tag such as "de" or "pt-BR"/);
    return true;
  });
});

test('a missing bundle is a config error naming renderer.bundle', async (t) => {
  const missing = join(tempDir(t), 'server.js');
  await assert.rejects(startRenderer(t, { bundle: missing }), {
    name: 'ConfigError',
    message: `config: renderer.bundle: no such file: ${missing} (build the pages with sidecar-ssr-build, `
      + 'then name the server bundle with --bundle FILE, SSR_RENDERER_BUNDLE or renderer.bundle)',
  });
});

test('a heap cap too small to load the bundle is a config error naming the key', async (t) => {
  // 4 MB: the worker starts, then runs out of heap importing the bundle, so it
  // never reports; Piscina replaces it once and then gives up for good.
  await assert.rejects(startRenderer(t, { threads: 2, max_old_generation_mb: 4, max_young_generation_mb: 1 }), {
    name: 'ConfigError',
    key: 'renderer.max_old_generation_mb',
    message: `config: renderer.max_old_generation_mb: 4 MB is too small to load the bundle (a worker ran out of heap importing ${FIXTURE_BUNDLE}, with max_young_generation_mb 1)`,
  });
});
