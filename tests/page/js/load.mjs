// Loads the trace page's pure modules (src/toolspan/page/trace/) as the page does: the files' text in one
// strict function, in this realm (so node:assert compares their arrays and maps as its own), returning the
// names asked for. format.js and model.js touch no DOM at their top level.
import { readFileSync } from "node:fs";

const TRACE = new URL("../../../src/toolspan/page/trace/", import.meta.url);

export function load(files, names) {
  const text = files.map((name) => readFileSync(new URL(name, TRACE), "utf8")).join("\n");
  return new Function('"use strict";\n' + text + "\nreturn { " + names.join(", ") + " };")();
}

export const page = load(["format.js", "model.js"], [
  "ROW", "LABEL_MAX", "clip", "fmtUs", "stepsText", "countText", "loadingText", "pickerText", "metaText",
  "EMPTY_PAGE", "shapeOf", "visibleTree", "haystackOf", "stepMatches", "idIndex", "findStep", "toolNames", "scaleUs", "marks",
]);

// A step of a page document with the fields every step has (schema "page"), and these.
export function step(id, parent, extra) {
  return Object.assign({ id, parent, kind: "tool", label: "tool_" + id, name: "execute_tool tool_" + id, start_us: 0, dur_us: 10, state: "COMPLETED" }, extra || {});
}
