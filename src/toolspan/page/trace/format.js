// format.js: the page's constants and how it writes numbers and labels (pure: no DOM, no state).

/** Height of a row of the timeline and of the tree, in CSS pixels. */
const ROW = 24;
/** Rows drawn beyond each edge of the view. */
const OVERSCAN = 10;
/** Longest label shown whole (longer ones end in an ellipsis). */
const LABEL_MAX = 160;
/** The mark a value cut when it was recorded carries. */
const TRUNC = "...[truncated";

/**
 * A label as shown: at most LABEL_MAX characters.
 * @param {unknown} s
 * @returns {string}
 */
function clip(s) {
  const t = String(s);
  return t.length > LABEL_MAX ? t.slice(0, LABEL_MAX) + "\u2026" : t;
}

/**
 * A duration or an offset in microseconds, short: 12µs, 3.4ms, 120ms, 1.50s, 2m3s; null: not ended.
 * @param {number | null | undefined} us
 * @returns {string}
 */
function fmtUs(us) {
  if (us === null || us === undefined) return "\u2026";
  if (us < 1000) return us + "\u00b5s";
  if (us < 1e6) return (us / 1000).toFixed(us < 1e4 ? 1 : 0) + "ms";
  if (us < 6e7) return (us / 1e6).toFixed(2) + "s";
  return Math.floor(us / 6e7) + "m" + Math.round((us % 6e7) / 1e6) + "s";
}

/**
 * "1 step", "3 steps".
 * @param {number} n
 * @returns {string}
 */
function stepsText(n) {
  return n + (n === 1 ? " step" : " steps");
}

/**
 * The timeline's count: every step, or how many of them the filter shows.
 * @param {number} shown
 * @param {number} total
 * @returns {string}
 */
function countText(shown, total) {
  return shown === total ? stepsText(total) : shown + " of " + total + " steps";
}

/**
 * The timeline's count while the page shows a first screen (a document with ``partial``): the first steps
 * only, the rest loading.
 * @param {number} shown
 * @param {number} total the steps the first screen holds
 * @returns {string}
 */
function loadingText(shown, total) {
  return (shown === total ? "the first " + stepsText(total) : shown + " of the first " + stepsText(total)) + ", loading the rest\u2026";
}

/**
 * What the trace picker says of a trace.
 * @param {PageDoc} p
 * @returns {string}
 */
function pickerText(p) {
  return clip(p.title || p.trace_id) + " \u00b7 " + (p.start_time || "") + " \u00b7 " + p.steps.length + " steps";
}

/**
 * The line under the title: when, how long (so far, while steps run), how many steps, which trace.
 * @param {PageDoc} p
 * @param {boolean} ongoing a step of a live run has not ended
 * @param {number} spanUs the time shown to scale (up to now while the run runs)
 * @returns {string}
 */
function metaText(p, ongoing, spanUs) {
  const when = p.start_ms ? new Date(p.start_ms).toISOString().replace("T", " ").slice(0, 19) + " UTC" : "";
  if (p.partial) return [when, "loading the whole run\u2026", "trace " + p.trace_id].filter(Boolean).join(" \u00b7 ");
  const took = ongoing ? fmtUs(spanUs) + " so far" : fmtUs(p.duration_us);
  return [when, took, stepsText(p.steps.length), "trace " + p.trace_id].filter(Boolean).join(" \u00b7 ");
}
