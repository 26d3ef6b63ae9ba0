// node --test: the trace page's model (model.js): the shape of a trace, the tree's rows, the filter, the
// id index, the time to scale.
import { test } from "node:test";
import assert from "node:assert/strict";
import { page, step } from "./load.mjs";

const { shapeOf, visibleTree, haystackOf, stepMatches, idIndex, findStep, toolNames, scaleUs, marks } = page;

// agent(0) > plan(1) > tools 2 and 3; tool 4 under the agent; step 5 names a parent out of range: a root.
const STEPS = [
  step("s0", null, { kind: "agent", label: "agent", start_us: 0, dur_us: 100 }),
  step("s1", 0, { kind: "plan", label: "plan", start_us: 5, dur_us: 50 }),
  step("s2", 1, { label: "search", start_us: 10, dur_us: 20 }),
  step("s3", 1, { label: "fetch", start_us: 20, dur_us: null, state: "RUNNING" }),
  step("s4", 0, { label: "search", start_us: 60, dur_us: 30, execution_id: "exec_4", state: "FAILED" }),
  step("s5", 9, { label: "late", start_us: 70, dur_us: 5 }),
];

test("shapeOf gives children, depths, ends, the tree's pre-order and the running steps", () => {
  const shape = shapeOf(STEPS, 120);
  assert.deepEqual(shape.kids, [[1, 4], [2, 3], [], [], [], []]);
  assert.deepEqual(shape.depth, [0, 1, 2, 2, 1, 0]);
  assert.deepEqual(shape.end, [100, 55, 30, 120, 90, 75]);
  assert.deepEqual(shape.order, [0, 1, 2, 3, 4, 5]);
  assert.deepEqual(shape.running, [3]);
});

test("shapeOf orders children by their place in the steps, under their parent", () => {
  const steps = [step("r", null), step("b", 2), step("a", 0), step("c", 0)];
  const shape = shapeOf(steps, 0);
  assert.deepEqual(shape.order, [0, 2, 1, 3]);
  assert.deepEqual(shape.depth, [0, 2, 1, 1]);
});

test("visibleTree leaves out the descendants of collapsed steps, and only theirs", () => {
  const { order, depth, kids } = shapeOf(STEPS, 120);
  assert.deepEqual(visibleTree(order, depth, kids, new Set()), [0, 1, 2, 3, 4, 5]);
  assert.deepEqual(visibleTree(order, depth, kids, new Set([1])), [0, 1, 4, 5]);
  assert.deepEqual(visibleTree(order, depth, kids, new Set([0])), [0, 5]);
  assert.deepEqual(visibleTree(order, depth, kids, new Set([2, 5])), [0, 1, 2, 3, 4, 5]); // leaves: nothing hidden
});

test("the filter takes states, a tool, the flagged calls and a text, all at once", () => {
  const none = { text: "", states: new Set(), tool: "", flagged: false };
  const shown = (f) => STEPS.map((s, k) => [s, k]).filter(([s]) => stepMatches(s, f, () => haystackOf(s))).map(([, k]) => k);
  assert.deepEqual(shown(none), [0, 1, 2, 3, 4, 5]);
  assert.deepEqual(shown({ ...none, states: new Set(["RUNNING", "FAILED"]) }), [3, 4]);
  assert.deepEqual(shown({ ...none, tool: "search" }), [2, 4]);
  assert.deepEqual(shown({ ...none, tool: "search", states: new Set(["FAILED"]) }), [4]);
  assert.deepEqual(shown({ ...none, text: "exec_4" }), [4]);
  assert.deepEqual(shown({ ...none, text: "plan" }), [1]);
  const flagged = [step("x", null), step("y", null, { policy_findings: [{ outcome: "violation", rule_id: "r1" }] })];
  assert.deepEqual(flagged.filter((s) => stepMatches(s, { ...none, flagged: true }, () => haystackOf(s))).map((s) => s.id), ["y"]);
});

test("a search looks into the values as JSON, lower-cased, and is asked for only when needed", () => {
  const s = step("id1", null, { input: { City: "Paris" }, output: "Sunny", error: { type: "ValueError", message: null, stack: null } });
  const hay = haystackOf(s);
  assert.ok(hay.includes('{"city":"paris"}'));
  assert.ok(hay.includes('"sunny"'));
  assert.ok(hay.includes("valueerror"));
  let asked = 0;
  const count = () => { asked += 1; return hay; };
  assert.equal(stepMatches(s, { text: "paris", states: new Set(["FAILED"]), tool: "", flagged: false }, count), false);
  assert.equal(asked, 0);
  assert.equal(stepMatches(s, { text: "paris", states: new Set(), tool: "", flagged: false }, count), true);
  assert.equal(asked, 1);
});

test("idIndex finds steps by span id and execution id across traces, the first one of a shared id", () => {
  const docs = [{ steps: STEPS }, { steps: [step("t0", null, { execution_id: "exec_4" }), step("s0", null)] }];
  const index = idIndex(docs);
  assert.deepEqual(index.get("s4"), [0, 4]);
  assert.deepEqual(index.get("exec_4"), [0, 4]);
  assert.deepEqual(index.get("t0"), [1, 0]);
  assert.deepEqual(index.get("s0"), [0, 0]);
  assert.equal(index.get("nope"), undefined);
});

test("findStep finds the step idIndex finds, for every id and for none", () => {
  const docs = [{ steps: STEPS }, { steps: [step("t0", null, { execution_id: "exec_4" }), step("s0", null, { execution_id: "s4" })] }];
  const index = idIndex(docs);
  const ids = ["nope", ...docs.flatMap((d) => d.steps.flatMap((s) => [s.id, s.execution_id || "nope"]))];
  for (const id of ids) assert.deepEqual(findStep(docs, id), index.get(id), id);
  assert.deepEqual(findStep(docs, "s4"), [0, 4]);
  assert.equal(findStep(docs, "nope"), undefined);
});

test("toolNames lists the tools' names once each, sorted, and nothing else", () => {
  assert.deepEqual(toolNames(STEPS), ["fetch", "late", "search"]);
});

test("scaleUs follows the clock while a live run runs, unless the clock is an hour off the trace", () => {
  const doc = { trace_id: "t", title: "", duration_us: 5e6, start_ms: 1_000_000, live: true, steps: [] };
  assert.equal(scaleUs(doc, 1, 1_000_000 + 8000), 8e6);
  assert.equal(scaleUs(doc, 1, 1_000_000 + 2000), 5e6); // the clock behind the trace: its span
  assert.equal(scaleUs(doc, 1, 1_000_000 + 5000 + 3.7e6), 5e6); // more than an hour on: ignored
  assert.equal(scaleUs(doc, 0, 1_000_000 + 8000), 5e6); // nothing runs
  assert.equal(scaleUs({ ...doc, live: false }, 1, 1_000_000 + 8000), 5e6); // not a live page
});

test("marks are the findings that mark a call: violations and denials, not the unchecked ones", () => {
  const findings = [{ outcome: "violation", rule_id: "a" }, { outcome: "unchecked", rule_id: "b" }, { outcome: "enforced", rule_id: "c" }];
  assert.deepEqual(marks(step("x", null, { policy_findings: findings })).map((f) => f.rule_id), ["a", "c"]);
  assert.deepEqual(marks(step("y", null)), []);
});
