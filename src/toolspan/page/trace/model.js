// model.js: what the page shows (its page documents, schema "page") and the state every part reads: the
// shown trace, its shape (parents, depths, tree order), the filter, the collapsed steps, the selection. The
// functions here are pure; the let bindings below are the page's one shared state.

/**
 * @typedef {{t_us: number, decision: string | null, by?: string | null, note: string | null, wait_us: number | null}} Approval
 * @typedef {{outcome: string, rule_id: string, rule_kind?: string, reason?: string, policy_id?: string, policy_version?: string}} Finding
 * @typedef {{by?: string | null, t_us?: number | null, model_input?: unknown}} Edited
 * @typedef {{type: string | null, message: string | null, stack: string | null}} StepError
 * @typedef {{
 *   id: string, parent: number | null, kind: string, label: string, name: string, start_us: number,
 *   dur_us: number | null, state: string, execution_id?: string, call_id?: string, arguments_sha256?: string,
 *   input?: unknown, output?: unknown, error?: StepError, thoughts?: [number, string][],
 *   approvals?: Approval[], wait?: [number, number | null], events?: [number, string, Record<string, unknown>][],
 *   attributes?: Record<string, unknown>, subplans?: string[], from?: string, critical?: true, truncated?: true,
 *   orphan?: true, cycle?: true, duplicate?: true, policy_findings?: Finding[], edited?: Edited
 * }} Step
 * @typedef {{type: string, t_ms: number, text?: string, step?: number | null}} Turn
 * @typedef {{policy_id: string, policy_version: string, violations: number, enforced: number, unchecked: number}} Audit
 * @typedef {{
 *   trace_id: string, title: string, start_time?: string | null, start_ms?: number, duration_us: number,
 *   live?: boolean, conversation_id?: string | null, counts?: Record<string, number>, steps: Step[],
 *   audit?: Audit, conversation?: Turn[], partial?: true
 * }} PageDoc
 * @typedef {{key: string, after: string | null, step: KeyedStep}} AddedStep
 * @typedef {{key: string, set: Partial<KeyedStep>, unset: string[]}} ChangedStep
 * @typedef {Omit<Step, "parent"> & {parent: string | null}} KeyedStep
 * @typedef {Omit<Turn, "step"> & {step?: string | null}} KeyedTurn
 * @typedef {{
 *   schema_version: string, trace_id: string, set?: Partial<PageDoc>, unset?: string[], added?: AddedStep[],
 *   changed?: ChangedStep[], removed?: string[], order?: string[], conversation?: {keep: number, items: KeyedTurn[]},
 *   page?: PageDoc
 * }} PageDelta
 * @typedef {{text: string, states: Set<string>, tool: string, flagged: boolean}} Filter
 * @typedef {{kids: number[][], depth: number[], end: number[], order: number[], running: number[]}} Shape
 */

/** @type {PageDoc} */
const EMPTY_PAGE = { steps: [], title: "", trace_id: "", duration_us: 0, counts: {}, conversation: [] };

/**
 * The shape of a trace's steps: each one's children, depth and end (a step not ended ends at the trace's
 * end, until the clock moves it), the tree's pre-order, the steps still running. A parent index out of
 * range makes a root.
 * @param {Step[]} list
 * @param {number} traceEndUs
 * @returns {Shape}
 */
function shapeOf(list, traceEndUs) {
  const n = list.length;
  /** @type {number[][]} */
  const children = Array.from({ length: n }, () => []);
  const depths = new Array(n).fill(0);
  /** @type {number[]} */
  const ends = new Array(n);
  /** @type {number[]} */
  const roots = [];
  /** @type {number[]} */
  const runs = [];
  for (let k = 0; k < n; k++) {
    const s = list[k];
    if (s.dur_us === null) { ends[k] = traceEndUs; runs.push(k); } else ends[k] = s.start_us + s.dur_us;
    if (s.parent === null || s.parent === undefined || s.parent >= n) roots.push(k); else children[s.parent].push(k);
  }
  /** @type {number[]} */
  const pre = [];
  const stack = roots.slice().reverse();
  while (stack.length) {
    const k = /** @type {number} */ (stack.pop());
    pre.push(k);
    const c = children[k];
    for (let j = c.length - 1; j >= 0; j--) { depths[c[j]] = depths[k] + 1; stack.push(c[j]); }
  }
  return { kids: children, depth: depths, end: ends, order: pre, running: runs };
}

/**
 * The tree's rows: the pre-order without the descendants of collapsed steps.
 * @param {number[]} pre
 * @param {number[]} depths
 * @param {number[][]} children
 * @param {Set<number>} shut
 * @returns {number[]}
 */
function visibleTree(pre, depths, children, shut) {
  /** @type {number[]} */
  const rows = [];
  for (let j = 0; j < pre.length; j++) {
    const k = pre[j];
    rows.push(k);
    if (shut.has(k) && children[k].length) {
      const d = depths[k];
      while (j + 1 < pre.length && depths[pre[j + 1]] > d) j++;
    }
  }
  return rows;
}

/** The fields a search looks into besides the names and ids, as JSON. */
const SEARCHED = /** @type {const} */ (["input", "edited", "output", "error", "thoughts", "attributes", "policy_findings"]);

/**
 * What a search looks into for a step, lower-cased: its label, name, ids, state, kind, and its values as JSON.
 * @param {Step} s
 * @returns {string}
 */
function haystackOf(s) {
  const parts = [s.label, s.name, s.id, s.execution_id || "", s.call_id || "", s.state, s.kind];
  for (const f of SEARCHED) if (s[f] !== undefined) parts.push(JSON.stringify(s[f]));
  return parts.join("\n").toLowerCase();
}

/**
 * Whether the filter shows a step. ``text`` is already lower-cased; ``hay`` gives the step's haystack
 * (asked for only when the other conditions hold).
 * @param {Step} s
 * @param {Filter} f
 * @param {() => string} hay
 * @returns {boolean}
 */
function stepMatches(s, f, hay) {
  if (f.states.size && !f.states.has(s.state)) return false;
  if (f.tool && !(s.kind === "tool" && s.label === f.tool)) return false;
  if (f.flagged && !s.policy_findings) return false;
  if (f.text && hay().indexOf(f.text) < 0) return false;
  return true;
}

/**
 * Where each span id and execution id is: [page, step] (the first one when two share an id).
 * @param {PageDoc[]} docs
 * @returns {Map<string, [number, number]>}
 */
function idIndex(docs) {
  /** @type {Map<string, [number, number]>} */
  const index = new Map();
  docs.forEach((p, pi) => p.steps.forEach((s, si) => {
    if (!index.has(s.id)) index.set(s.id, [pi, si]);
    if (s.execution_id && !index.has(s.execution_id)) index.set(s.execution_id, [pi, si]);
  }));
  return index;
}

/**
 * Where the first step with this span or execution id is, [page, step], as idIndex finds it, without an
 * index (one id: one pass).
 * @param {PageDoc[]} docs
 * @param {string} id
 * @returns {[number, number] | undefined}
 */
function findStep(docs, id) {
  for (let pi = 0; pi < docs.length; pi++) {
    const list = docs[pi].steps;
    for (let si = 0; si < list.length; si++) if (list[si].id === id || list[si].execution_id === id) return [pi, si];
  }
  return undefined;
}

/**
 * The names of a trace's tools, sorted (at most 500, for the tool filter).
 * @param {Step[]} list
 * @returns {string[]}
 */
function toolNames(list) {
  const names = new Set();
  list.forEach((s) => { if (s.kind === "tool") names.add(s.label); });
  return Array.from(names).sort().slice(0, 500);
}

/**
 * The time shown to scale: the trace's recorded span, or, in a live page with steps still running, up to
 * now (the browser's clock; ignored when it is more than an hour off the trace), so running bars grow.
 * @param {PageDoc} p
 * @param {number} runningCount
 * @param {number} nowMs
 * @returns {number}
 */
function scaleUs(p, runningCount, nowMs) {
  let s = p.duration_us;
  if (p.live && runningCount) {
    const now = (nowMs - (p.start_ms || 0)) * 1000;
    if (now > s && now - s < 3.6e9) s = now;
  }
  return s;
}

/**
 * A step's policy findings that mark it (violations and denials; not the unchecked ones).
 * @param {Step} s
 * @returns {Finding[]}
 */
function marks(s) {
  return (s.policy_findings || []).filter((f) => f.outcome !== "unchecked");
}

// ---------- the page's state ----------
/**
 * Each step's key (schema "page-delta"): its span id, "<span id>#<n>" for the n-th record of that id (n >= 2).
 * @param {Step[]} list
 * @returns {string[]}
 */
function stepKeys(list) {
  /** @type {Map<string, number>} */
  const seen = new Map();
  return list.map((s) => {
    const n = (seen.get(s.id) || 0) + 1;
    seen.set(s.id, n);
    return n === 1 ? s.id : s.id + "#" + n;
  });
}

/**
 * A page delta (schema "page-delta": what toolspan serve's page stream sends) applied to the document it was
 * made from: the new document (the old one is left as it is; steps that did not change are the same
 * objects). Steps are found by key, never by position.
 * @param {PageDoc} doc
 * @param {PageDelta} delta
 * @returns {PageDoc}
 */
function applyDelta(doc, delta) {
  if (delta.page) return delta.page;
  const oldKeys = stepKeys(doc.steps);
  /** @type {Map<string, Step | KeyedStep>} steps by key; a changed or added one with its parent as a key */
  const byKey = new Map();
  /** @type {Set<string>} the keys whose step holds its parent as a key */
  const keyed = new Set();
  oldKeys.forEach((k, i) => byKey.set(k, doc.steps[i]));
  const removed = new Set(delta.removed || []);
  removed.forEach((k) => byKey.delete(k));
  /** @param {Step | KeyedStep} s @param {string} k @returns {KeyedStep} */
  const asKeyed = (s, k) => {
    if (keyed.has(k)) return /** @type {KeyedStep} */ (s);
    const p = /** @type {Step} */ (s).parent;
    return Object.assign({}, s, { parent: p === null || p === undefined ? null : oldKeys[p] });
  };
  for (const c of delta.changed || []) {
    const was = byKey.get(c.key);
    if (!was) throw new Error("page delta: no step " + c.key);
    /** @type {Record<string, unknown>} */
    const s = Object.assign({}, asKeyed(was, c.key));
    c.unset.forEach((f) => { delete s[f]; });
    Object.assign(s, c.set);
    byKey.set(c.key, /** @type {KeyedStep} */ (/** @type {unknown} */ (s)));
    keyed.add(c.key);
  }
  const added = delta.added || [];
  for (const a of added) { byKey.set(a.key, a.step); keyed.add(a.key); }
  /** @type {string[]} */
  let keys;
  if (delta.order) keys = delta.order;
  else {
    /** @type {Map<string | null, string>} */
    const follows = new Map(added.map((a) => /** @type {[string | null, string]} */ ([a.after, a.key])));
    keys = [];
    /** @param {string | null} k */
    const chain = (k) => {
      let next = follows.get(k);
      while (next !== undefined) { follows.delete(k); keys.push(next); k = next; next = follows.get(k); }
    };
    chain(null);
    oldKeys.forEach((k) => { if (!removed.has(k)) { keys.push(k); chain(k); } });
  }
  /** @type {Map<string, number>} */
  const position = new Map(keys.map((k, i) => [k, i]));
  /** @param {string | null | undefined} k @returns {number | null} */
  const at = (k) => {
    if (k === null || k === undefined) return null;
    const i = position.get(k);
    if (i === undefined) throw new Error("page delta: no step " + k);
    return i;
  };
  // A step kept as it was, whose parent did not move, stays the same object.
  const steps = keys.map((k) => {
    const s = byKey.get(k);
    if (!s) throw new Error("page delta: no step " + k);
    if (!keyed.has(k)) {
      const old = /** @type {Step} */ (s);
      const p = old.parent === null ? null : at(oldKeys[old.parent]);
      return p === old.parent ? old : Object.assign({}, old, { parent: p });
    }
    return /** @type {Step} */ (Object.assign({}, s, { parent: at(/** @type {KeyedStep} */ (s).parent) }));
  });
  /** @type {Record<string, unknown>} */
  const out = Object.assign({}, doc);
  (delta.unset || []).forEach((f) => { delete out[f]; });
  Object.assign(out, delta.set || {});
  out.steps = steps;
  let conversation = doc.conversation || [];
  if (delta.conversation) {
    const turns = delta.conversation.items.map((t) => /** @type {Turn} */ ("step" in t ? Object.assign({}, t, { step: at(t.step) }) : t));
    conversation = conversation.slice(0, delta.conversation.keep).concat(turns);
  }
  out.conversation = conversation;
  return /** @type {PageDoc} */ (/** @type {unknown} */ (out));
}

/** The members of a page document the page stream sends in parts, in this order (server/_streams/page.py). */
const PARTED = /** @type {const} */ (["steps", "conversation"]);

/**
 * A whole document the page stream sent in parts (events "page-part", then "page"): ``rest`` is the document
 * with each of its long lists (PARTED) as ``{parts: N}``, ``parts`` the parts as they came (each a JSON
 * array, already parsed); each such list is the next N parts' items, in order. Without parts, ``rest`` is
 * the whole document. Throws when the parts do not add up to the document (one lost or doubled).
 * @param {PageDoc | PageDoc[]} rest
 * @param {unknown[]} parts
 * @returns {PageDoc | PageDoc[]}
 */
function wholePage(rest, parts) {
  if (!parts.length && (Array.isArray(rest) || PARTED.every((key) => Array.isArray(rest[key]) || rest[key] === undefined))) return rest;
  if (Array.isArray(rest)) throw new Error("page parts: " + parts.length + " parts for a list of documents");
  /** @type {Record<string, unknown>} */
  const doc = Object.assign({}, rest); // the members in the document's order
  let next = 0;
  for (const key of PARTED) {
    const ref = /** @type {unknown} */ (doc[key]);
    if (Array.isArray(ref) || ref === undefined) continue;
    const n = ref !== null && typeof ref === "object" ? /** @type {{parts?: unknown}} */ (ref).parts : undefined;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 0 || next + n > parts.length) {
      throw new Error("page parts: " + key + " wants " + JSON.stringify(ref) + ", " + (parts.length - next) + " parts left");
    }
    const mine = parts.slice(next, next + n);
    if (!mine.every(Array.isArray)) throw new Error("page parts: a part is not a list");
    doc[key] = /** @type {unknown[]} */ ([]).concat(...mine);
    next += n;
  }
  if (next !== parts.length) throw new Error("page parts: " + (parts.length - next) + " parts more than the document holds");
  return /** @type {PageDoc} */ (/** @type {unknown} */ (doc));
}

/** @type {PageDoc[]} every trace the page holds */
let pages = [];
/** index of the shown trace */
let cur = 0;
/** @type {PageDoc} the shown trace */
let P = EMPTY_PAGE;
/** @type {Step[]} its steps */
let steps = [];
/** @type {number[][]} children step indices */
let kids = [];
/** @type {number[]} */
let depth = [];
/** @type {number[]} end in us (a running step: the time shown to scale) */
let end = [];
/** @type {number[]} tree pre-order */
let order = [];
/** @type {number[]} steps not ended */
let running = [];
/** the time shown to scale, in us */
let spanUs = 0;
/** @type {Set<number>} */
let collapsed = new Set();
/** @type {number[]} the tree's rows (step indices) */
let treeRows = [];
/** @type {number[]} the timeline's rows (step indices) */
let tlRows = [];
/** the selected step, -1: none */
let sel = -1;
/** @type {(string | undefined)[] | null} lower-cased search text per step, made when first searched */
let hay = null;
/** @type {Filter} */
const filter = { text: "", states: new Set(), tool: "", flagged: false };
/** @type {Map<string, [number, number]> | null} span id / execution id -> [page, step]: made when first
 * asked (whereIs), not for every document the page is given (a run of 100,000 steps has 200,000 ids) */
let byId = null;

/**
 * Where the step with this span or execution id is, [page, step] (idIndex's, made on first use).
 * @param {string} id
 * @returns {[number, number] | undefined}
 */
function whereIs(id) {
  if (!byId) byId = idIndex(pages);
  return byId.get(id);
}
