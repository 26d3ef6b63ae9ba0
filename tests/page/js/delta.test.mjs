// node --test: a page delta (schema "page-delta", what toolspan serve's page stream sends) applied by the
// page (model.js's applyDelta) gives the new document, and so the model of the new document. The cases
// (deltas.json) are the bridge's own page_delta of real documents (tests/page/test_js.py writes and checks
// them): the hand-built scenario's traces grown record by record, a duplicate record, steps kept in another
// order, a step gone, keys that collide.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { load, step } from "./load.mjs";

const { applyDelta, stepKeys, shapeOf } = load(["format.js", "model.js"], ["applyDelta", "stepKeys", "shapeOf"]);
const CASES = JSON.parse(readFileSync(new URL("deltas.json", import.meta.url), "utf8"));

for (const c of CASES) {
  test("applying each delta gives the next document and its model: " + c.name, () => {
    for (let i = 0; i + 1 < c.docs.length; i++) {
      const before = structuredClone(c.docs[i]);
      const applied = applyDelta(c.docs[i], c.deltas[i]);
      const next = c.docs[i + 1];
      assert.deepEqual(applied, next, c.name + ", delta " + i);
      assert.deepEqual(shapeOf(applied.steps, applied.duration_us), shapeOf(next.steps, next.duration_us));
      assert.deepEqual(c.docs[i], before); // the document it was applied to is left as it was
    }
  });
}

test("steps keep their keys by span id, a repeated id numbered from its second record", () => {
  assert.deepEqual(stepKeys([step("a", null), step("b", 0), step("a", null), step("a", 1)]), ["a", "b", "a#2", "a#3"]);
});

test("a step the delta does not touch stays the same object, one it changes does not", () => {
  const doc = { trace_id: "t", title: "", duration_us: 20, steps: [step("a", null), step("b", 0), step("c", 0)], conversation: [] };
  const delta = { schema_version: "1.1", trace_id: "t", set: { duration_us: 30 }, added: [], removed: [], changed: [{ key: "b", set: { state: "FAILED" }, unset: [] }] };
  const applied = applyDelta(doc, delta);
  assert.equal(applied.steps[0], doc.steps[0]);
  assert.equal(applied.steps[2], doc.steps[2]);
  assert.notEqual(applied.steps[1], doc.steps[1]);
  assert.deepEqual(applied.steps[1], step("b", 0, { state: "FAILED" }));
  assert.equal(applied.duration_us, 30);
});

test("a delta naming a step the document does not hold is refused, not half applied", () => {
  const doc = { trace_id: "t", title: "", duration_us: 0, steps: [step("a", null)], conversation: [] };
  const delta = { schema_version: "1.1", trace_id: "t", set: {}, added: [], removed: [], changed: [{ key: "zz", set: { state: "FAILED" }, unset: [] }] };
  assert.throws(() => applyDelta(doc, delta), /no step zz/);
  assert.deepEqual(doc.steps, [step("a", null)]);
});
