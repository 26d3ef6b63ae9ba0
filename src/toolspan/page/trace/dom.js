// dom.js: the document, the page's config, the shared helpers (common.js's el: data is only ever written
// through text nodes and DOM properties, never as HTML).

/**
 * @typedef {{stream_url: string, data_url: string, fetch_first?: boolean, list_url?: string, page_stream_url?: string, version?: string}} LiveConfig
 * @typedef {{decisions_url: string, cancels_url: string, whoami_url: string}} ControlConfig
 * @typedef {{tool_states: string[], trace_states: string[], live_states: string[], decisions: string[]}} Words
 * @typedef {{live: LiveConfig | null, control?: ControlConfig, words: Words}} TraceConfig
 */

const doc = document;
const C = toolspanCommon;
const el = C.el;
/** @type {TraceConfig} */
const config = C.config;
/** The tool states, from the page's config (semconv's one list of them). */
const STATES = config.words.tool_states;

/**
 * The element of the page with this id (the template holds every one the script asks for).
 * @param {string} id
 * @returns {HTMLElement}
 */
function $(id) {
  return /** @type {HTMLElement} */ (doc.getElementById(id));
}

/**
 * The input or select of the page with this id.
 * @param {string} id
 * @returns {HTMLInputElement & HTMLSelectElement}
 */
function field(id) {
  return /** @type {HTMLInputElement & HTMLSelectElement} */ (doc.getElementById(id));
}

/**
 * The JSON a <script type="application/json"> of the page holds.
 * @param {string} id
 * @returns {unknown}
 */
function readJSON(id) {
  const n = doc.getElementById(id);
  return n ? JSON.parse(n.textContent || "null") : null;
}

/**
 * A link to a step of the page (a focusable <a> without href: the page holds no URL of its own).
 * @param {string} text
 * @param {() => void} go
 * @returns {HTMLElement}
 */
function actionLink(text, go) {
  const a = el("a", "step iso", text);
  a.tabIndex = 0;
  a.setAttribute("role", "link");
  a.addEventListener("click", go);
  a.addEventListener("keydown", (e) => { if (e.key === "Enter") go(); });
  return a;
}
