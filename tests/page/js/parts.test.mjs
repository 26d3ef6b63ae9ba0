// node --test: a whole document the page stream sends in parts (events "page-part", then "page" with the
// rest: server/_streams/page.py) put together by the page (model.js's wholePage): exactly the document, its
// members in their order; parts lost or doubled on the way are refused, never shown.
import { test } from "node:test";
import assert from "node:assert/strict";
import { load, step } from "./load.mjs";

const { wholePage } = load(["format.js", "model.js"], ["wholePage"]);

const STEPS = Array.from({ length: 7 }, (_, k) => step("s" + k, k ? 0 : null, { start_us: k }));
const TURNS = [{ type: "user_message", t_ms: 0, text: "go" }, { type: "tool_call", t_ms: 1, step: 1 }, { type: "tool_result", t_ms: 2, step: 1 }];
const DOC = { schema_version: "1.0", trace_id: "t", title: "run", duration_us: 9, steps: STEPS, conversation: TURNS, counts: { COMPLETED: 7 } };

/** What the stream sends for DOC: the steps in parts of at most ``size`` items, then the conversation's. */
function sent(size) {
  const cut = (items) => Array.from({ length: Math.ceil(items.length / size) }, (_, k) => items.slice(k * size, (k + 1) * size));
  const steps = cut(STEPS);
  const turns = cut(TURNS);
  const rest = Object.assign({}, DOC, { steps: { parts: steps.length }, conversation: { parts: turns.length } });
  // As the page gets them: JSON text, each parsed on its own.
  return { rest: JSON.parse(JSON.stringify(rest)), parts: [...steps, ...turns].map((p) => JSON.parse(JSON.stringify(p))) };
}

test("the parts and the rest make exactly the document, its members in their order", () => {
  for (const size of [1, 2, 3, 7]) {
    const { rest, parts } = sent(size);
    const whole = wholePage(rest, parts);
    assert.deepEqual(whole, DOC);
    assert.equal(JSON.stringify(whole), JSON.stringify(DOC)); // the same text: the download is the document
  }
});

test("a list with no parts is empty, and a document sent whole is taken as it is", () => {
  const rest = Object.assign({}, DOC, { steps: { parts: 2 }, conversation: { parts: 0 } });
  assert.deepEqual(wholePage(rest, [STEPS.slice(0, 3), STEPS.slice(3)]), Object.assign({}, DOC, { conversation: [] }));
  assert.equal(wholePage(DOC, []), DOC);
  const list = [DOC, DOC];
  assert.equal(wholePage(list, []), list);
});

test("parts lost or doubled on the way are refused", () => {
  const { rest, parts } = sent(2);
  assert.throws(() => wholePage(rest, parts.slice(1)), /page parts/); // one lost
  assert.throws(() => wholePage(rest, [parts[0], ...parts]), /page parts/); // one doubled
  assert.throws(() => wholePage(rest, []), /page parts/); // none came
  assert.throws(() => wholePage(DOC, parts), /page parts/); // parts, then a document sent whole
  assert.throws(() => wholePage([DOC], parts), /page parts/);
  const odd = parts.slice();
  odd[1] = { not: "a list" };
  assert.throws(() => wholePage(rest, odd), /page parts/);
  assert.throws(() => wholePage(Object.assign({}, rest, { steps: { parts: -1 } }), parts), /page parts/);
  assert.throws(() => wholePage(Object.assign({}, rest, { steps: "many" }), parts), /page parts/);
});
