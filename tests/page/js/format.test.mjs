// node --test: how the trace page writes durations, labels and counts (format.js).
import { test } from "node:test";
import assert from "node:assert/strict";
import { page, step } from "./load.mjs";

const { clip, fmtUs, stepsText, countText, pickerText, metaText, LABEL_MAX } = page;

test("fmtUs writes each range in its unit, and a step not ended as an ellipsis", () => {
  assert.equal(fmtUs(null), "\u2026");
  assert.equal(fmtUs(undefined), "\u2026");
  assert.equal(fmtUs(0), "0\u00b5s");
  assert.equal(fmtUs(999), "999\u00b5s");
  assert.equal(fmtUs(1000), "1.0ms");
  assert.equal(fmtUs(9999), "10.0ms");
  assert.equal(fmtUs(12345), "12ms");
  assert.equal(fmtUs(999999), "1000ms");
  assert.equal(fmtUs(1e6), "1.00s");
  assert.equal(fmtUs(59.994e6), "59.99s");
  assert.equal(fmtUs(6e7), "1m0s");
  assert.equal(fmtUs(6e7 + 1.5e6), "1m2s");
  assert.equal(fmtUs(3 * 6e7 + 59e6), "3m59s");
});

test("clip keeps a label of LABEL_MAX characters and cuts a longer one with an ellipsis", () => {
  const whole = "x".repeat(LABEL_MAX);
  assert.equal(clip(whole), whole);
  assert.equal(clip(whole + "y"), whole + "\u2026");
  assert.equal(clip(42), "42");
});

test("counts say step or steps, and how many of them the filter shows", () => {
  assert.equal(stepsText(1), "1 step");
  assert.equal(stepsText(0), "0 steps");
  assert.equal(countText(3, 3), "3 steps");
  assert.equal(countText(1, 1), "1 step");
  assert.equal(countText(2, 5), "2 of 5 steps");
});

test("the picker and the line under the title name the trace, when, how long, how many steps", () => {
  const doc = { trace_id: "ab", title: "Plan a trip", start_time: "2026-01-02T03:04:05Z", start_ms: Date.UTC(2026, 0, 2, 3, 4, 5), duration_us: 1500, steps: [step("a", null), step("b", 0)] };
  assert.equal(pickerText(doc), "Plan a trip \u00b7 2026-01-02T03:04:05Z \u00b7 2 steps");
  assert.equal(pickerText({ ...doc, title: "" }), "ab \u00b7 2026-01-02T03:04:05Z \u00b7 2 steps");
  assert.equal(metaText(doc, false, 0), "2026-01-02 03:04:05 UTC \u00b7 1.5ms \u00b7 2 steps \u00b7 trace ab");
  assert.equal(metaText(doc, true, 2.5e6), "2026-01-02 03:04:05 UTC \u00b7 2.50s so far \u00b7 2 steps \u00b7 trace ab");
  assert.equal(metaText({ ...doc, start_ms: 0, steps: [] }, false, 0), "1.5ms \u00b7 0 steps \u00b7 trace ab");
});

test("a first screen says it holds the first steps and that the rest and the run's length are loading", () => {
  assert.equal(page.loadingText(200, 200), "the first 200 steps, loading the rest\u2026");
  assert.equal(page.loadingText(3, 200), "3 of the first 200 steps, loading the rest\u2026");
  const first = { trace_id: "ab", title: "t", start_ms: 0, duration_us: 5e6, steps: [step("1", null)], partial: /** @type {true} */ (true) };
  assert.equal(metaText(first, false, 0), "loading the whole run\u2026 \u00b7 trace ab");
  assert.equal(metaText({ ...first, partial: undefined }, false, 0), "5.00s \u00b7 1 step \u00b7 trace ab");
});
