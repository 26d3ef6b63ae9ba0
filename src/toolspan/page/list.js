"use strict";
// The trace list of toolspan serve: every run, newest first, from the server's list of runs (the config's
// urls.runs: the same rows as JSON), kept live by the all-traces stream (urls.stream); each run links to its
// trace page (urls.trace, "{trace_id}" in it replaced). Every URL comes from the page's config. Data is only
// ever written through text nodes and DOM properties.
(function () {
  /**
   * A run as the server lists it.
   * @typedef {{
   *   trace_id: string, name: string | null, root_name: string | null, conversation_id: string | null,
   *   service: string | null, start: number, duration_ms: number | null, state: string, tool_calls: number,
   *   errors: number, denied: number, cancelled: number, waiting: number
   * }} Run
   * @typedef {{runs: string, stream: string, trace: string}} ListUrls
   */
  const C = window.toolspanCommon;
  const { el } = C;
  const doc = document;
  /** @type {ListUrls} */
  const URLS = C.config.urls;
  /**
   * The element of the page with this id (the page or build() made it).
   * @param {string} id
   * @returns {HTMLElement}
   */
  const $ = (id) => /** @type {HTMLElement} */ (doc.getElementById(id));
  const app = $("app");
  // The states from the server (semconv's one list of them): the live ones first, then the others.
  /** @type {string[]} */
  const LIVE = C.config.words.live_states;
  /** @type {string[]} */
  const TRACE_STATES = C.config.words.trace_states;
  const STATES = [...LIVE, ...TRACE_STATES.filter((st) => LIVE.indexOf(st) < 0)];
  /** @param {string} st */
  const label = (st) => String(st).charAt(0) + String(st).slice(1).toLowerCase().replace(/_/g, " "); // "Awaiting approval"
  const PASSED = ["q", "state", "service", "tool", "conversation_id", "from_ms", "to_ms", "limit"];

  /** @type {Run[]} */
  let rows = [];
  /** @type {Run[]} rows of the pages loaded with "Older runs" */
  let older = [];
  /** @type {string | null} */
  let next = null;
  let built = false;
  /** @type {EventSource | null} */
  let stream = null;
  let loading = false;
  let again = false;

  function params() {
    const url = new URL(location.href);
    const out = new URLSearchParams();
    PASSED.forEach((k) => { const v = url.searchParams.get(k); if (v) out.set(k, v); });
    return out;
  }
  /**
   * @param {string} name
   * @param {string} value
   */
  function setParam(name, value) {
    const url = new URL(location.href);
    if (value) url.searchParams.set(name, value); else url.searchParams.delete(name);
    history.replaceState(null, "", url.pathname + url.search);
    older = [];
    load();
  }

  // ---------- the page's parts ----------
  function build() {
    built = true;
    app.textContent = "";
    const head = el("div", "listhead");
    const h1 = el("h1", null, "Runs");
    const sub = el("p", "sub");
    sub.id = "summary";
    head.append(h1, sub);
    const tools = el("form", "toolbar");
    tools.setAttribute("role", "search");
    const q = el("input");
    q.type = "search";
    q.id = "q";
    q.placeholder = "Search: what was asked, agent, tool, service, conversation or trace id";
    q.setAttribute("aria-label", "Search runs");
    q.value = params().get("q") || "";
    const go = el("button", null, "Search");
    go.type = "submit";
    tools.append(q, go);
    tools.addEventListener("submit", (e) => { e.preventDefault(); setParam("q", q.value.trim()); });
    const chips = el("nav", "chips");
    chips.id = "states";
    chips.setAttribute("aria-label", "Filter by state");
    const shown = (params().get("state") || "").toUpperCase();
    ["", ...STATES].forEach((st) => {
      const b = el("button", "chip" + (st ? " s-" + st : ""));
      b.type = "button";
      b.dataset.state = st;
      b.setAttribute("aria-pressed", st === shown ? "true" : "false");
      if (st) b.append(el("span", "dot s-" + st));
      b.append(el("span", null, st ? label(st) : "All"));
      b.addEventListener("click", () => {
        chips.querySelectorAll("button").forEach((x) => x.setAttribute("aria-pressed", x === b ? "true" : "false"));
        setParam("state", st);
      });
      chips.appendChild(b);
    });
    const table = el("table", "runs");
    table.id = "runs";
    const thead = el("thead");
    const tr = el("tr");
    [["Run", "run"], ["State", "state"], ["Started", "start"], ["Duration", "dur"], ["Tool calls", "calls"], ["Service", "service"]].forEach(([t, c]) => {
      const th = el("th", c, t);
      th.scope = "col";
      tr.appendChild(th);
    });
    thead.appendChild(tr);
    const tbody = el("tbody");
    tbody.id = "rows";
    table.append(thead, tbody);
    const empty = el("div", "empty");
    empty.id = "empty";
    empty.hidden = true;
    const more = el("button", "more", "Older runs");
    more.type = "button";
    more.id = "older";
    more.hidden = true;
    more.addEventListener("click", loadOlder);
    const problem = el("p", "problem");
    problem.id = "problem";
    problem.hidden = true;
    app.append(head, tools, chips, problem, table, empty, more);
  }

  /** @param {string} state */
  function stateBadge(state) {
    const b = el("span", "badge s-" + state, label(state));
    b.dataset.state = state;
    return b;
  }

  /**
   * @param {string} cls
   * @param {string} text
   */
  function pill(cls, text) { return el("span", "pill " + cls, text); }

  function renderRows() {
    const tbody = $("rows");
    const all = rows.concat(older);
    const now = Date.now();
    // Bars to scale: the longest run of the page fills its cell (a running one: up to now).
    /** @param {Run} r @returns {number | null} */
    const dur = (r) => (r.duration_ms !== null ? r.duration_ms : LIVE.indexOf(r.state) >= 0 ? Math.max(0, now - r.start) : null);
    const longest = Math.max(1, ...all.map((r) => dur(r) || 0));
    tbody.textContent = "";
    all.forEach((r) => {
      const tr = el("tr", "row s-" + r.state);
      tr.dataset.trace = r.trace_id;
      const link = URLS.trace.replace("{trace_id}", encodeURIComponent(r.trace_id));
      const run = el("td", "run");
      const a = el("a", "name iso", r.name || r.trace_id);
      a.href = link;
      a.title = r.name || r.trace_id;
      const under = el("div", "under iso");
      [r.root_name && r.root_name !== r.name ? r.root_name : null, r.conversation_id, r.trace_id.slice(0, 8)].filter(Boolean).forEach((part, i) => {
        if (i) under.append(" \u00b7 ");
        under.append(el("span", null, part));
      });
      run.append(a, under);
      const state = el("td", "state");
      state.appendChild(stateBadge(r.state));
      const start = el("td", "start", C.fmtAgo(r.start, now));
      start.title = C.fmtWhen(r.start);
      start.dataset.start = String(r.start);
      const d = dur(r);
      const durCell = el("td", "dur");
      const bar = el("span", "durbar");
      const fill = el("span", "fill s-" + r.state + (r.duration_ms === null ? " open" : ""));
      fill.style.width = d === null ? "0" : Math.max(2, (100 * d) / longest) + "%";
      bar.appendChild(fill);
      const text = el("span", "durtext", d === null ? "\u2026" : C.fmtMs(d) + (r.duration_ms === null ? " so far" : ""));
      durCell.append(text, bar);
      const calls = el("td", "calls");
      calls.append(el("span", "n", String(r.tool_calls)));
      if (r.waiting) calls.append(pill("s-AWAITING_APPROVAL", r.waiting + " waiting"));
      if (r.errors) calls.append(pill("s-FAILED", r.errors + (r.errors === 1 ? " error" : " errors")));
      if (r.denied) calls.append(pill("s-DENIED", r.denied + " denied"));
      if (r.cancelled) calls.append(pill("s-CANCELLED", r.cancelled + " cancelled"));
      const service = el("td", "service iso", r.service || "");
      tr.append(run, state, start, durCell, calls, service);
      tr.addEventListener("click", (e) => {
        const target = /** @type {Element} */ (e.target);
        if (!target.closest("a") && !String(getSelection() || "")) location.href = link;
      });
      tbody.appendChild(tr);
    });
    const empty = $("empty");
    empty.hidden = all.length > 0;
    empty.textContent = "";
    if (!all.length) {
      const filtered = Array.from(params().keys()).length > 0;
      if (filtered) empty.append(el("p", null, "No run matches these filters."));
      else {
        empty.append(el("h2", null, "No runs yet"));
        empty.append(el("p", null, "Point an application's OpenTelemetry exporter at this server; its runs appear here as they arrive:"));
        const pre = el("pre", "iso", "OTEL_EXPORTER_OTLP_ENDPOINT=" + location.origin + "\nOTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf\nTOOLSPAN_PENDING_SPANS=all    # runs show while they run");
        empty.append(pre);
      }
    }
    $("older").hidden = !next;
    summary(all);
  }

  /** @param {Run[]} all */
  function summary(all) {
    const box = $("summary");
    /** @param {string} st */
    const count = (st) => all.filter((r) => r.state === st).length;
    const parts = [all.length + (all.length === 1 ? " run" : " runs") + (next ? " shown" : "")];
    const waiting = count("AWAITING_APPROVAL");
    if (waiting) parts.push(waiting + " awaiting approval");
    const running = count("RUNNING");
    if (running) parts.push(running + " running");
    const failed = count("FAILED");
    if (failed) parts.push(failed + " failed");
    box.textContent = parts.join(" \u00b7 ") + ". Newest first; each opens its live trace page.";
  }

  // ---------- data ----------
  /** @param {Error} e */
  function fail(e) {
    if (e instanceof C.Unauthorized) { built = false; C.askToken(app, e, start); return; }
    const p = doc.getElementById("problem");
    if (p) { p.hidden = false; p.textContent = "Could not load the runs: " + e; }
  }
  function load() {
    if (loading) { again = true; return; }
    loading = true;
    C.api(URLS.runs + "?" + params().toString()).then(([status, body]) => {
      if (!built) build();
      const p = $("problem");
      if (status !== 200) { p.hidden = false; p.textContent = (body && body.error) || "HTTP " + status; rows = []; next = null; renderRows(); return; }
      p.hidden = !body.note; // why the trace backend's runs are not listed, in one line
      p.textContent = body.note || "";
      rows = body.traces;
      next = body.next_cursor;
      renderRows();
      if (stream) C.refreshInboxCount(); // a run changed: maybe a call began or stopped waiting
      follow();
    }).catch(fail).finally(() => {
      loading = false;
      doc.body.dataset.ready = "1";
      if (again) { again = false; load(); }
    });
  }
  function loadOlder() {
    if (!next) return;
    const ps = params();
    ps.set("cursor", next);
    C.api(URLS.runs + "?" + ps.toString()).then(([status, body]) => {
      if (status !== 200) return;
      older = older.concat(body.traces);
      next = body.next_cursor;
      renderRows();
    }).catch(fail);
  }

  // Live: each event of the all-traces stream reloads the first page (a burst: once a second at most), and
  // the durations of running runs grow with the clock.
  let timer = 0;
  function follow() {
    if (stream) return;
    const badge = $("top-live");
    const es = new EventSource(C.streamUrl(URLS.stream));
    stream = es;
    es.onopen = () => { badge.hidden = false; badge.className = "live on"; badge.textContent = "live"; };
    es.onerror = () => { badge.hidden = false; badge.className = "live"; badge.textContent = "reconnecting"; };
    const soon = () => { if (!timer) timer = setTimeout(() => { timer = 0; if (!older.length) load(); }, 1000); };
    ["message", "act", "observe", "span", "update", "done"].forEach((name) => es.addEventListener(name, soon));
    setInterval(() => { if (rows.some((r) => LIVE.indexOf(r.state) >= 0)) renderRows(); else doc.querySelectorAll("td.start").forEach((td) => { td.textContent = C.fmtAgo(Number(/** @type {HTMLElement} */ (td).dataset.start)); }); }, 5000);
  }

  function start() {
    C.topBar("traces");
    load();
  }
  start();
})();
