import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { decide } from '../src/decision.js';

// The edge's Go decide() runs the same cases (edge/internal/server/decision_test.go).
const { cases } = JSON.parse(readFileSync(new URL('../../proto/testdata/page-decisions.json', import.meta.url), 'utf8'));

for (const { name, load, want } of cases) {
  test(`decide: ${name}`, () => {
    if (want.error) {
      assert.throws(() => decide(load), (err) => err instanceof Error && err.message.includes(want.error));
      return;
    }
    assert.deepEqual(decide(load), want);
  });
}
