"use strict";
// toolspan trace page. Data is only ever written through text nodes and DOM properties, never as HTML.
(function () {
  const ROW = 24;
  const OVERSCAN = 10;
  const LABEL_MAX = 160;
  const TRUNC = "...[truncated";
  const LIVE_EVENTS = ["message", "update", "span", "act", "observe", "progress", "tool:start", "tool:end", "tool:error", "done"];
  const doc = document;
  const $ = (id) => doc.getElementById(id);
  const C = window.toolspanCommon;

  function el(tag, cls, text) {
    const e = doc.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function clip(s) { s = String(s); return s.length > LABEL_MAX ? s.slice(0, LABEL_MAX) + "\u2026" : s; }
  function fmtUs(us) {
    if (us === null || us === undefined) return "\u2026";
    if (us < 1000) return us + "\u00b5s";
    if (us < 1e6) return (us / 1000).toFixed(us < 1e4 ? 1 : 0) + "ms";
    if (us < 6e7) return (us / 1e6).toFixed(2) + "s";
    return Math.floor(us / 6e7) + "m" + Math.round((us % 6e7) / 1e6) + "s";
  }
  function readJSON(id) { const n = $(id); return n ? JSON.parse(n.textContent) : null; }

  const config = readJSON("ts-config") || {};
  const STATES = config.words.tool_states; // from the page's config: semconv's one list of them
  let pages = [];
  let cur = 0; // index of the shown trace
  let P = null; // the shown page
  let steps = [];
  let kids = []; // children step indices
  let depth = [];
  let end = []; // end in us (running: trace end)
  let order = []; // tree pre-order
  let collapsed = new Set();
  let treeRows = [];
  let tlRows = [];
  let sel = -1;
  let hay = null; // lower-cased search text per step
  const filter = { text: "", states: new Set(), tool: "", flagged: false };
  const byId = new Map(); // span id / execution id -> [page, step]

  // ---------- virtual list ----------
  // Fixed-height rows; only the rows in view (plus OVERSCAN) exist. A row is re-rendered only when the
  // index it shows or the list's version (data, filter, collapse) changes; selection just flips an attribute.
  function VList(host, render, selected, role, offset) {
    const spacer = el("div", "spacer");
    host.appendChild(spacer);
    const pool = [];
    let n = 0;
    let ver = 0;
    let raf = 0;
    let height = 0;
    let top = 0; // the scroll position, cached: reading it would force a layout on every selection
    let pending = false; // a scroll position to apply at the next frame
    const measure = () => { height = host.clientHeight || 600; };
    function frame() {
      raf = 0;
      if (pending) { pending = false; host.scrollTop = top; }
      draw();
    }
    const schedule = () => { if (!raf) raf = requestAnimationFrame(frame); };
    function draw() {
      if (!height) measure();
      const first = Math.max(0, Math.floor((top - offset) / ROW) - OVERSCAN);
      const last = Math.min(n, Math.ceil((top - offset + height) / ROW) + OVERSCAN);
      const need = Math.max(0, last - first);
      while (pool.length < need) { const r = el("div", "row"); r.setAttribute("role", role); spacer.appendChild(r); pool.push(r); }
      while (pool.length > need) pool.pop().remove();
      for (let k = 0; k < need; k++) {
        const r = pool[k];
        const idx = first + k;
        if (r._idx !== idx || r._ver !== ver) {
          r._idx = idx;
          r._ver = ver;
          r.style.top = idx * ROW + "px";
          render(r, idx);
        }
        r.setAttribute("aria-selected", selected(idx) ? "true" : "false");
      }
    }
    host.addEventListener("scroll", () => { if (!pending) top = host.scrollTop; schedule(); });
    window.addEventListener("resize", () => { measure(); schedule(); });
    return {
      set(count) {
        n = count;
        ver++;
        spacer.style.height = n * ROW + "px";
        top = Math.max(0, Math.min(top, offset + n * ROW - height));
        draw();
      },
      redraw: draw,
      // The list's height changed (its pane was sized again): measure it, draw what it now shows.
      resize() { measure(); schedule(); },
      reveal(i) {
        if (!height) measure();
        // Row i spans [offset + i * ROW, + ROW); a sticky header of height offset covers the top of the view.
        const t = offset + i * ROW;
        if (t - offset < top) top = t - offset;
        else if (t + ROW > top + height) top = t + ROW - height;
        else { draw(); return; }
        pending = true;
        schedule();
        draw();
      },
    };
  }

  // ---------- data ----------
  function setData(data, keep) {
    const keepId = keep && sel >= 0 ? steps[sel].id : null;
    const keepTrace = keep && P ? P.trace_id : null;
    pages = Array.isArray(data) ? data : [data];
    byId.clear();
    pages.forEach((p, pi) => p.steps.forEach((s, si) => {
      if (!byId.has(s.id)) byId.set(s.id, [pi, si]);
      if (s.execution_id && !byId.has(s.execution_id)) byId.set(s.execution_id, [pi, si]);
    }));
    const picker = $("trace");
    picker.textContent = "";
    pages.forEach((p, i) => {
      const o = el("option", null, clip(p.title || p.trace_id) + " \u00b7 " + (p.start_time || "") + " \u00b7 " + p.steps.length + " steps");
      o.value = String(i);
      picker.appendChild(o);
    });
    picker.hidden = pages.length < 2;
    auditPanel();
    let t = keepTrace ? pages.findIndex((p) => p.trace_id === keepTrace) : 0;
    showTrace(Math.max(0, t), keep);
    if (keepId && byId.has(keepId)) { const [, si] = byId.get(keepId); select(si, false); }
    autoSelect();
  }

  function showTrace(i, keep) {
    cur = i;
    P = pages[i] || { steps: [], title: "", trace_id: "", duration_us: 0, counts: {}, conversation: [] };
    steps = P.steps;
    $("trace").value = String(i);
    const n = steps.length;
    kids = Array.from({ length: n }, () => []);
    depth = new Array(n).fill(0);
    end = new Array(n);
    const roots = [];
    for (let k = 0; k < n; k++) {
      const s = steps[k];
      end[k] = s.dur_us === null ? null : s.start_us + s.dur_us;
      if (s.parent === null || s.parent === undefined || s.parent >= n) roots.push(k); else kids[s.parent].push(k);
    }
    running = [];
    for (let k = 0; k < n; k++) if (end[k] === null) running.push(k);
    clockTick(false);
    order = [];
    const stack = roots.slice().reverse();
    while (stack.length) {
      const k = stack.pop();
      order.push(k);
      const c = kids[k];
      for (let j = c.length - 1; j >= 0; j--) { depth[c[j]] = depth[k] + 1; stack.push(c[j]); }
    }
    if (!keep) { collapsed = new Set(); sel = -1; }
    hay = null;
    $("title").textContent = P.title || P.trace_id || "trace";
    $("title").title = P.title || "";
    meta();
    doc.title = clip(P.title || "trace") + " \u2014 toolspan";
    const tools = new Set();
    steps.forEach((s) => { if (s.kind === "tool") tools.add(s.label); });
    const list = $("tools");
    list.textContent = "";
    const any = el("option", null, "all tools"); any.value = ""; list.appendChild(any);
    Array.from(tools).sort().slice(0, 500).forEach((t) => { const o = el("option", null, clip(t)); o.value = t; list.appendChild(o); });
    list.value = tools.has(filter.tool) ? filter.tool : "";
    filter.tool = list.value;
    legend();
    notice();
    axis();
    applyFilter();
    buildTree();
    conversation();
    if (sel >= n) sel = -1;
    detail();
    if (config.live) liveBadge();
  }

  // Time shown to scale: the trace's recorded span, or, in a live page with steps still running, up to
  // now (the browser's clock; ignored when it is more than an hour off the trace), so running bars grow.
  let spanUs = 0;
  let running = [];
  function clockTick(redraw) {
    let s = P.duration_us;
    if (P.live && running.length) {
      const now = (Date.now() - P.start_ms) * 1000;
      if (now > s && now - s < 3.6e9) s = now;
    }
    running.forEach((k) => { end[k] = s; });
    if (redraw && s !== spanUs) { spanUs = s; axis(); meta(); timeline.set(tlRows.length); return; }
    spanUs = s;
  }

  // The line under the title: when, how long (so far, while steps run), how many steps, which trace.
  function meta() {
    const n = steps.length;
    const when = P.start_ms ? new Date(P.start_ms).toISOString().replace("T", " ").slice(0, 19) + " UTC" : "";
    const took = running.length && P.live ? fmtUs(spanUs) + " so far" : fmtUs(P.duration_us);
    $("meta").textContent = [when, took, n + (n === 1 ? " step" : " steps"), "trace " + P.trace_id].filter(Boolean).join(" \u00b7 ");
  }

  // In a live page: the calls waiting for an approval, named above the timeline (each one click away).
  function notice() {
    const box = $("notice");
    box.textContent = "";
    const waiting = P.live ? steps.map((s, k) => [s, k]).filter(([s]) => s.state === "AWAITING_APPROVAL") : [];
    box.hidden = !waiting.length;
    if (!waiting.length) return;
    box.append(el("span", "dot s-AWAITING_APPROVAL"), el("span", null, waiting.length === 1 ? "1 call waits for approval: " : waiting.length + " calls wait for approval: "));
    waiting.slice(0, 5).forEach(([s, k], i) => {
      if (i) box.append(", ");
      const a = el("a", "step iso", clip(s.label));
      a.tabIndex = 0;
      a.setAttribute("role", "link");
      a.addEventListener("click", () => { select(k, true); $("detail").focus(); });
      a.addEventListener("keydown", (e) => { if (e.key === "Enter") { select(k, true); $("detail").focus(); } });
      box.append(a);
    });
  }

  function legend() {
    const box = $("legend");
    box.textContent = "";
    STATES.forEach((st) => {
      const c = (P.counts || {})[st] || 0;
      if (!c && st === "PENDING") return;
      const b = el("button", c ? null : "zero");
      b.type = "button";
      b.dataset.state = st;
      b.setAttribute("aria-pressed", filter.states.has(st) ? "true" : "false");
      b.title = "Show only " + st + " steps";
      b.append(el("span", "dot s-" + st), el("span", null, st + " " + c));
      b.addEventListener("click", () => {
        if (filter.states.has(st)) filter.states.delete(st); else filter.states.add(st);
        b.setAttribute("aria-pressed", filter.states.has(st) ? "true" : "false");
        applyFilter();
      });
      box.appendChild(b);
    });
  }

  function axis() {
    const a = $("axis");
    a.textContent = "";
    const ticks = el("span", "ticks");
    for (let k = 0; k <= 4; k++) {
      const t = el("span", null, fmtUs(Math.round((spanUs * k) / 4)));
      t.style.left = k * 25 + "%";
      if (k === 4) t.style.transform = "translateX(-100%)";
      ticks.appendChild(t);
    }
    a.append(el("span", "name"), el("span", "start"), ticks, el("span", "dur"));
  }

  function haystack(k) {
    if (!hay) hay = new Array(steps.length);
    let h = hay[k];
    if (h === undefined) {
      const s = steps[k];
      const parts = [s.label, s.name, s.id, s.execution_id || "", s.call_id || "", s.state, s.kind];
      for (const f of ["input", "edited", "output", "error", "thoughts", "attributes", "policy_findings"]) if (s[f] !== undefined) parts.push(JSON.stringify(s[f]));
      h = hay[k] = parts.join("\n").toLowerCase();
    }
    return h;
  }

  function matches(k) {
    const s = steps[k];
    if (filter.states.size && !filter.states.has(s.state)) return false;
    if (filter.tool && !(s.kind === "tool" && s.label === filter.tool)) return false;
    if (filter.flagged && !s.policy_findings) return false;
    if (filter.text && haystack(k).indexOf(filter.text) < 0) return false;
    return true;
  }

  function applyFilter() {
    tlRows = [];
    for (let k = 0; k < steps.length; k++) if (matches(k)) tlRows.push(k);
    $("count").textContent = tlRows.length === steps.length ? steps.length + (steps.length === 1 ? " step" : " steps") : tlRows.length + " of " + steps.length + " steps";
    timeline.set(tlRows.length);
    $("timeline-empty").hidden = tlRows.length > 0;
    fitHeights();
  }

  // At phone width the panels stack: a short list takes the height of its rows, not a fixed share. Wider,
  // the timeline's pane (and the details beside it) is as tall as the run's rows, up to its share of the
  // window (62vh), and never less than PANE_MIN, so the details keep room: a small run leaves no blank pane.
  const narrow = matchMedia("(max-width: 760px)");
  const PANE_MIN = 260;
  function fitHeights() {
    const set = (node, prop, value) => { if (node.style[prop] === value) return false; node.style[prop] = value; return true; };
    const fit = (host, rows, head) => set(host, "height", narrow.matches ? Math.max(ROW * 2, Math.min(window.innerHeight * 0.46, head + rows * ROW + 6)) + "px" : "");
    let changed = fit($("timeline"), tlRows.length, 18);
    changed = fit($("tree"), treeRows.length, 0) || changed;
    const panes = $("panes");
    const rows = $("timeline-h").offsetHeight + 18 + steps.length * ROW + 4;
    const fits = !narrow.matches && rows < window.innerHeight * 0.62;
    changed = set(panes, "height", fits ? Math.max(PANE_MIN, rows) + "px" : "") || changed;
    changed = set(panes, "minHeight", fits ? PANE_MIN + "px" : "") || changed;
    if (changed) { timeline.resize(); tree.resize(); }
  }

  function buildTree() {
    treeRows = [];
    for (let j = 0; j < order.length; j++) {
      const k = order[j];
      treeRows.push(k);
      if (collapsed.has(k) && kids[k].length) {
        const d = depth[k];
        while (j + 1 < order.length && depth[order[j + 1]] > d) j++;
      }
    }
    tree.set(treeRows.length);
    fitHeights();
  }

  // ---------- rows ----------
  function nameCell(r, s, k, indent, twisty) {
    const name = el("span", "name");
    name.style.paddingLeft = Math.min(indent, 40) * 12 + "px";
    if (twisty) {
      const t = el("span", "twist", kids[k].length ? (collapsed.has(k) ? "\u25B8" : "\u25BE") : "");
      t.dataset.twist = "1";
      name.appendChild(t);
    }
    name.append(el("span", "dot s-" + s.state), el("span", "kind", s.kind), el("span", "label iso", clip(s.label)));
    const m = marks(s);
    if (m.length) {
      const b = el("span", "pmark o-" + m[0].outcome, (m[0].outcome === "enforced" ? "denied: " : "\u26a0 ") + m.map((f) => f.rule_id).join(", "));
      b.title = m.map((f) => OUTCOME[f.outcome] + " " + f.rule_id + ": " + f.reason).join("\n");
      name.appendChild(b);
    }
    return name;
  }

  function renderTimelineRow(r, idx) {
    const k = tlRows[idx];
    const s = steps[k];
    r.textContent = "";
    r.dataset.step = String(k);
    r.id = "tl-" + idx;
    r.className = "row" + (s.critical ? " crit" : "") + (marks(s).length ? " flagged" : "");
    const track = el("span", "track");
    const span = Math.max(1, spanUs);
    const bar = el("span", "bar s-" + s.state);
    bar.style.left = (100 * s.start_us) / span + "%";
    bar.style.width = (100 * Math.max(0, end[k] - s.start_us)) / span + "%";
    if (s.wait) {
      const w = el("span", "wait");
      const len = Math.max(1, end[k] - s.start_us);
      const wl = s.wait[1] === null ? end[k] - s.wait[0] : s.wait[1];
      w.style.left = (100 * (s.wait[0] - s.start_us)) / len + "%";
      w.style.width = (100 * wl) / len + "%";
      w.title = "waiting for approval " + fmtUs(wl);
      bar.appendChild(w);
    }
    track.appendChild(bar);
    r.title = s.label.length > LABEL_MAX ? "" : s.label + " \u2014 " + s.state + " \u2014 " + fmtUs(s.dur_us);
    r.append(nameCell(r, s, k, depth[k], false), el("span", "start", "+" + fmtUs(s.start_us)), track, el("span", "dur", fmtUs(s.dur_us)));
  }

  function renderTreeRow(r, idx) {
    const k = treeRows[idx];
    const s = steps[k];
    r.textContent = "";
    r.dataset.step = String(k);
    r.id = "tr-" + idx;
    r.className = "row" + (marks(s).length ? " flagged" : "");
    if (kids[k].length) r.setAttribute("aria-expanded", collapsed.has(k) ? "false" : "true"); else r.removeAttribute("aria-expanded");
    r.setAttribute("aria-level", String(depth[k] + 1));
    r.append(nameCell(r, s, k, depth[k], true), el("span", "dur", fmtUs(s.dur_us)));
  }

  // ---------- selection ----------
  function select(k, updateHash) {
    sel = k;
    if (k < 0) { timeline.redraw(); tree.redraw(); }
    if (k >= 0) {
      let i = tlRows.indexOf(k);
      if (i >= 0) { timeline.reveal(i); $("timeline").setAttribute("aria-activedescendant", "tl-" + i); } else timeline.redraw();
      let a = k;
      let changed = false;
      while ((a = steps[a].parent) !== null && a !== undefined && a < steps.length) if (collapsed.delete(a)) changed = true;
      if (changed) buildTree();
      i = treeRows.indexOf(k);
      if (i >= 0) { tree.reveal(i); $("tree").setAttribute("aria-activedescendant", "tr-" + i); } else tree.redraw();
      if (updateHash) setHash("#" + (steps[k].execution_id || steps[k].id));
    }
    detail();
  }

  // The deep link follows the selection; replaceState is slow on a big page, so a burst of selections
  // (a held arrow key) updates it once.
  let hashWanted = null;
  function setHash(h) {
    if (hashWanted === null) setTimeout(() => { if (location.hash !== hashWanted) history.replaceState(null, "", hashWanted); hashWanted = null; }, 0);
    hashWanted = h;
  }

  function hashId() {
    try { return decodeURIComponent(location.hash.slice(1)); } catch (e) { return location.hash.slice(1); }
  }

  function goTo(id) {
    const hit = byId.get(id);
    if (!hit) return false;
    if (hit[0] !== cur) showTrace(hit[0], false);
    select(hit[1], true);
    return true;
  }

  function stepLink(text, id) {
    const a = el("a", "step iso", text);
    a.tabIndex = 0;
    a.setAttribute("role", "link");
    const go = () => { goTo(id); $("detail").focus(); };
    a.addEventListener("click", go);
    a.addEventListener("keydown", (e) => { if (e.key === "Enter") go(); });
    return a;
  }

  // ---------- policy audit ----------
  // Audit pages (toolspan audit --to html) carry policy_findings on tool steps and an audit summary.
  const OUTCOME = { violation: "violation", enforced: "denied", unchecked: "unchecked" };
  function marks(s) { return (s.policy_findings || []).filter((f) => f.outcome !== "unchecked"); }

  function findingLine(f, tag, withPolicy, link) {
    const d = el(tag, "finding o-" + f.outcome);
    d.append(el("span", "outcome", OUTCOME[f.outcome]), " ");
    if (link) d.append(link, " ");
    d.appendChild(el("span", "iso", f.rule_id + " (" + f.rule_kind + "): " + f.reason));
    if (withPolicy) d.appendChild(el("span", "policy iso", " \u00b7 policy " + f.policy_id + " version " + f.policy_version));
    return d;
  }

  function jump(pi, si) {
    if (pi !== cur) showTrace(pi, false);
    select(si, true);
    $("detail").focus();
  }

  function auditPanel() {
    const panel = $("audit-panel");
    const list = $("audit-list");
    list.textContent = "";
    const audited = pages.filter((p) => p.audit);
    panel.hidden = !audited.length;
    if (!audited.length) { filter.flagged = false; $("audit-only").checked = false; return; }
    const total = { violations: 0, enforced: 0, unchecked: 0 };
    audited.forEach((p) => { for (const k in total) total[k] += p.audit[k]; });
    const a = audited[0].audit;
    $("audit-h").textContent = "Policy " + a.policy_id + " version " + a.policy_version + ": " + total.violations + " violation(s), " + total.enforced + " denied, " + total.unchecked + " unchecked";
    panel.classList.toggle("clean", !total.violations && !total.enforced);
    let n = 0;
    pages.forEach((p, pi) => p.steps.forEach((s, si) => (s.policy_findings || []).forEach((f) => {
      if (n++ >= 1000) return;
      const link = el("a", "step iso", clip(s.label));
      link.tabIndex = 0;
      link.setAttribute("role", "link");
      link.title = "Show this call" + (pages.length > 1 ? " (trace " + p.trace_id + ")" : "");
      link.addEventListener("click", () => jump(pi, si));
      link.addEventListener("keydown", (e) => { if (e.key === "Enter") jump(pi, si); });
      list.appendChild(findingLine(f, "li", false, link));
    })));
    if (!n) list.appendChild(el("li", "empty", "No findings: every tool call keeps to the policy."));
    else if (n > 1000) list.appendChild(el("li", "empty", (n - 1000) + " more findings: see the steps' details."));
  }

  // ---------- detail ----------
  function copyText(text, btn) {
    const done = () => { const old = btn.textContent; btn.textContent = "copied"; setTimeout(() => { btn.textContent = old; }, 900); };
    if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(text).then(done, () => fallbackCopy(text, done));
    else fallbackCopy(text, done);
  }
  function fallbackCopy(text, done) {
    const t = el("textarea");
    t.value = text;
    doc.body.appendChild(t);
    t.select();
    try { doc.execCommand("copy"); done(); } catch (e) { /* nothing to do */ }
    t.remove();
  }
  function copyBtn(getText) {
    const b = el("button", null, "copy");
    b.type = "button";
    b.addEventListener("click", () => copyText(getText(), b));
    return b;
  }

  function jsonNode(v, key, open) {
    const label = () => { const f = doc.createDocumentFragment(); if (key !== null) f.append(el("span", "k iso", '"' + key + '"'), ": "); return f; };
    if (v === null || typeof v !== "object") {
      const line = el("div");
      line.appendChild(label());
      if (typeof v === "string") {
        line.appendChild(el("span", "str iso", '"' + v + '"'));
        if (v.indexOf(TRUNC) >= 0) line.appendChild(el("span", "trunc", " (truncated)"));
      } else line.appendChild(el("span", typeof v === "number" ? "num" : "lit", JSON.stringify(v)));
      return line;
    }
    const arr = Array.isArray(v);
    const keys = arr ? null : Object.keys(v);
    const size = arr ? v.length : keys.length;
    const d = el("details");
    const sum = el("summary");
    sum.appendChild(label());
    sum.appendChild(el("span", "more", (arr ? "[ " : "{ ") + size + (arr ? (size === 1 ? " item ]" : " items ]") : size === 1 ? " key }" : " keys }")));
    d.appendChild(sum);
    let filled = false;
    const fill = () => {
      if (filled) return;
      filled = true;
      const LIMIT = 1000;
      const count = Math.min(size, LIMIT);
      for (let j = 0; j < count; j++) d.appendChild(arr ? jsonNode(v[j], null, false) : jsonNode(v[keys[j]], keys[j], false));
      if (size > LIMIT) {
        const more = el("button", null, "show " + (size - LIMIT) + " more");
        more.type = "button";
        more.addEventListener("click", () => {
          more.remove();
          for (let j = LIMIT; j < size; j++) d.appendChild(arr ? jsonNode(v[j], null, false) : jsonNode(v[keys[j]], keys[j], false));
        });
        d.appendChild(more);
      }
    };
    d.addEventListener("toggle", () => { if (d.open) fill(); });
    if (open) { d.open = true; fill(); }
    return d;
  }

  function jsonBlock(v) {
    const box = el("div", "json");
    box.appendChild(jsonNode(v, null, true));
    box.querySelectorAll(":scope > details > details").forEach((d) => { d.open = true; });
    return box;
  }

  // What a call's edited arguments say: the body received them, who decided the edit and when.
  function editedNote(edited) {
    const p = el("p", "edited", "Edited" + (edited.by ? " by " + edited.by : "") + (edited.t_us !== null && edited.t_us !== undefined ? " at +" + fmtUs(edited.t_us) : "") + ": the tool received these arguments, not the model's (below).");
    p.dataset.by = edited.by === null || edited.by === undefined ? "" : String(edited.by);
    return p;
  }

  function section(box, title, copyGet) {
    const h = el("h4", null, title);
    if (copyGet) h.appendChild(copyBtn(copyGet));
    box.appendChild(h);
  }

  function kv(box, rows) {
    const dl = el("dl", "kv");
    rows.forEach(([k, v, node]) => {
      if (v === undefined || v === null) return;
      dl.append(el("dt", null, k));
      const dd = el("dd", "iso");
      if (node) dd.appendChild(node); else dd.textContent = String(v);
      dl.append(dd);
    });
    box.appendChild(dl);
  }

  function detail() {
    const box = $("detail");
    box.textContent = "";
    if (sel < 0 || sel >= steps.length) {
      box.appendChild(el("p", "empty", steps.length ? "Select a step (click, or arrow keys in the timeline) to see its details." : "This trace has no spans."));
      return;
    }
    const s = steps[sel];
    const h = el("h3");
    h.append(el("span", "badge s-" + s.state, s.state), el("span", "iso", s.label));
    box.appendChild(h);
    controls(box, s);
    const meta = el("div", "meta");
    meta.append(el("span", null, s.kind + " \u00b7 span "), el("span", "iso", s.name));
    box.appendChild(meta);
    if (s.policy_findings) {
      section(box, "Policy", () => JSON.stringify(s.policy_findings, null, 2));
      s.policy_findings.forEach((f) => box.appendChild(findingLine(f, "div", true)));
    }
    const idsText = () => JSON.stringify({ execution_id: s.execution_id, tool_call_id: s.call_id, trace_id: P.trace_id, span_id: s.id }, null, 2);
    section(box, "Ids and timing", idsText);
    const parent = s.parent !== null && s.parent !== undefined ? steps[s.parent] : null;
    kv(box, [
      ["execution_id", s.execution_id],
      ["tool_call_id", s.call_id],
      ["trace_id", P.trace_id],
      ["span_id", s.id],
      ["parent", parent ? parent.label : null, parent ? stepLink(clip(parent.label), parent.id) : null],
      ["start", "+" + fmtUs(s.start_us)],
      ["duration", s.dur_us === null ? "not ended" : fmtUs(s.dur_us)],
      ["critical path", s.critical ? "yes" : null],
      ["parent", s.orphan && P.live ? "not here yet: a span is sent when it ends (TOOLSPAN_PENDING_SPANS=all sends it when it starts)" : null],
      ["flags", ["orphan", "cycle", "duplicate"].filter((f) => s[f] && !(f === "orphan" && P.live)).join(", ") || null],
    ]);
    if (s.from || (s.subplans && s.subplans.length)) {
      section(box, "Links");
      const links = el("div", "links");
      if (s.from) {
        const t = byId.get(s.from);
        links.appendChild(t ? stepLink("\u2191 started by " + clip(pages[t[0]].steps[t[1]].label), s.from) : el("span", "iso", "started by " + s.from + " (not in this file)"));
      }
      (s.subplans || []).forEach((id) => {
        const t = byId.get(id);
        if (t) links.appendChild(stepLink("\u2193 sub-plan " + clip(pages[t[0]].steps[t[1]].label), id));
      });
      box.appendChild(links);
    }
    if (s.truncated) box.appendChild(el("p", "trunc", "Some values of this step were truncated when recorded (marked \u201c...[truncated\u201d)."));
    if (s.error) {
      // A denial or a cancellation is how the call ended, not an error: said plainly, not in red.
      const outcome = s.state === "DENIED" ? "Denied" : s.state === "CANCELLED" ? "Cancelled" : null;
      section(box, outcome || "Error", () => JSON.stringify(s.error, null, 2));
      const e = el("div", outcome ? "outcome" : "error");
      if (s.error.type) e.appendChild(el("pre", "text iso", s.error.type));
      if (s.error.message) e.appendChild(el("pre", "text iso", s.error.message));
      if (s.error.stack) e.appendChild(el("pre", "text iso", s.error.stack));
      box.appendChild(e);
    }
    for (const [f, title] of [["input", s.kind === "tool" ? "Arguments" : "Input"], ["output", s.kind === "tool" ? "Result" : "Output"]]) {
      if (s[f] === undefined) continue;
      const v = s[f];
      const edited = f === "input" && s.edited ? s.edited : null;
      section(box, edited ? title + " (edited)" : title, () => (typeof v === "string" ? v : JSON.stringify(v, null, 2)));
      if (edited) box.appendChild(editedNote(edited));
      box.appendChild(typeof v === "string" && s.kind !== "tool" ? el("pre", "text iso", v) : jsonBlock(v));
      if (edited) {
        section(box, "The model's arguments", () => JSON.stringify(edited.model_input, null, 2));
        const model = jsonBlock(edited.model_input);
        model.classList.add("model-args");
        box.appendChild(model);
      }
    }
    if (s.thoughts) {
      section(box, "Thoughts");
      s.thoughts.forEach(([t, text]) => { const p = el("pre", "text iso", text); p.title = "+" + fmtUs(t); box.appendChild(p); });
    }
    if (s.approvals) {
      section(box, "Approvals");
      kv(box, s.approvals.map((a) => [
        "+" + fmtUs(a.t_us),
        a.decision === null ? "approval requested" : a.decision + (a.by ? " by " + a.by : "") + (a.wait_us !== null ? " after " + fmtUs(a.wait_us) : "") + (a.note ? " \u2014 " + a.note : ""),
      ]));
    }
    if (s.events) {
      section(box, "Events", () => JSON.stringify(s.events, null, 2));
      s.events.forEach(([t, name, attrs]) => { box.appendChild(el("div", "iso", "+" + fmtUs(t) + " " + name)); if (Object.keys(attrs).length) box.appendChild(jsonBlock(attrs)); });
    }
    if (s.attributes) {
      section(box, "Attributes", () => JSON.stringify(s.attributes, null, 2));
      box.appendChild(jsonBlock(s.attributes));
    }
  }

  // ---------- control: decide and cancel through the server ----------
  // Deciding needs a decider token (toolspan serve --decider NAME=TOKEN): the page asks the server what the
  // tab's token may do (whoami_url) and shows the buttons, with the decider's name, only to a token that may
  // decide; to another it offers to take a decider's token instead (which reads too). The token is the tab's
  // own (common.js: session storage only, sent in the Authorization header, never in a URL or a cookie). A
  // decision names the exact call (its execution id and trace) and the digest of the arguments the page
  // shows (arguments_sha256), so it is given to that call only, and only while it shows them.
  const control = { who: null, editing: null, confirming: null, note: "", message: null };
  function decider() { return control.who && control.who.can.indexOf("decide") >= 0; }
  function learnWho() { C.whoami().then((w) => { control.who = w; detail(); }, () => { control.who = { name: null, can: [] }; detail(); }); }
  function say(s, text, ok) { control.message = { id: s.id, state: s.state, text: text, ok: ok }; detail(); }
  function post(url, body, s, what) {
    say(s, what + "\u2026", true);
    C.api(url, { method: "POST", body: body }).then(([status, doc]) => {
      const ok = status >= 200 && status < 300;
      if (status === 401) { C.setToken(null); C.forgetWho(); learnWho(); }
      if (ok) { control.editing = null; control.confirming = null; control.note = ""; }
      const done = doc && typeof doc.decision === "string" ? doc.decision + (doc.by ? " by " + doc.by : "") : what + (doc && doc.by ? " by " + doc.by : "");
      say(s, ok ? done + ": sent; the call's new state shows here when it arrives" : "refused (" + status + "): " + ((doc && doc.error) || ""), ok);
    }).catch((e) => say(s, what + " failed: " + e, false));
  }
  function target(s) { return { execution_id: s.execution_id, trace_id: P.trace_id }; }
  function decide(s, decision, args) {
    const body = Object.assign(target(s), { decision: decision, shown: s.arguments_sha256 });
    if (args !== undefined) body.arguments = args;
    if (control.note.trim()) body.note = control.note.trim();
    post(config.control.decisions_url, body, s, args !== undefined ? "allow with edited arguments" : decision);
  }
  function cancel(s) {
    const body = target(s);
    if (control.note.trim()) body.note = control.note.trim();
    post(config.control.cancels_url, body, s, "cancel");
  }
  function tokenField(bar, box, note) {
    if (note) bar.appendChild(el("span", "meta", note));
    bar.appendChild(C.tokenForm({ field: "control-token", button: "control-token-save" }, "A decider's token", "Use it", () => { control.who = null; learnWho(); }, "control-token"));
    box.appendChild(bar);
  }
  function result(box, m) { if (m) { const p = el("p", m.ok ? "control-ok" : "control-error", m.text); p.id = "control-result"; box.appendChild(p); } }
  function controls(box, s) {
    const c = config.control;
    if (!c || s.kind !== "tool" || !P || !config.live) return;
    const waiting = s.state === "AWAITING_APPROVAL";
    const running = s.state === "RUNNING";
    // A message stays while the call is in the state it was sent in (then its new state says the rest).
    const m = control.message && control.message.id === s.id && control.message.state === s.state ? control.message : null;
    if (!waiting && !running) { result(box, m); return; }
    const bar = el("div", "control");
    bar.id = "control";
    if (!control.who) { bar.appendChild(el("span", "meta", "checking what this tab's token may do\u2026")); box.appendChild(bar); return; }
    if (!decider()) {
      tokenField(bar, box, (C.token() ? "This tab's token may read, not decide. " : "") + (waiting ? "To decide this call: " : "To cancel this call: "));
      result(box, m);
      return;
    }
    const me = el("span", "meta", "deciding as " + (control.who.name || "?"));
    me.id = "control-by";
    bar.appendChild(me);
    const note = el("input");
    note.id = "control-note";
    note.type = "text";
    note.placeholder = waiting ? "Note (optional): why" : "Note (optional): why cancel";
    note.setAttribute("aria-label", "Note");
    note.value = control.note;
    note.addEventListener("input", () => { control.note = note.value; });
    const button = (id, text, cls, onClick) => { const b = el("button", cls, text); b.type = "button"; b.id = id; b.addEventListener("click", onClick); return b; };
    const row = el("div", "control-buttons");
    if (waiting) {
      row.append(
        button("control-allow", "Allow", "allow", () => decide(s, "allow")),
        button("control-deny", "Deny", "deny", () => decide(s, "deny")),
        button("control-edit", "Edit\u2026", null, () => { control.editing = { id: s.id, text: JSON.stringify(s.input === undefined ? {} : s.input, null, 2), error: null }; detail(); }),
      );
    } else if (control.confirming === s.id) {
      row.append(
        el("span", "confirm", "Cancel this running call?"),
        button("control-cancel-yes", "Yes, cancel it", "deny", () => cancel(s)),
        button("control-cancel-no", "Keep it running", null, () => { control.confirming = null; detail(); }),
      );
    } else {
      row.append(button("control-cancel", "Cancel\u2026", "deny", () => { control.confirming = s.id; detail(); }));
    }
    bar.append(note, row);
    box.appendChild(bar);
    const ed = control.editing;
    if (waiting && ed && ed.id === s.id) {
      const area = el("textarea", "iso");
      area.id = "control-arguments";
      area.rows = 8;
      area.spellcheck = false;
      area.value = ed.text;
      area.setAttribute("aria-label", "Edited arguments");
      area.addEventListener("input", () => { ed.text = area.value; });
      const go = button("control-send-edit", "Allow with these arguments", "allow", () => {
        let value;
        try { value = JSON.parse(area.value); } catch (e) { ed.error = "not JSON: " + e.message; detail(); return; }
        if (value === null || typeof value !== "object" || Array.isArray(value)) { ed.error = "the arguments must be a JSON object"; detail(); return; }
        ed.error = null;
        decide(s, "allow", value);
      });
      const wrap = el("div", "control-edit");
      wrap.append(area, go);
      if (ed.error) wrap.appendChild(el("p", "control-error", ed.error));
      box.appendChild(wrap);
    }
    result(box, m);
  }

  // ---------- conversation ----------
  const WHO = { user_message: "user", thought: "thought", tool_call: "act", tool_result: "observe", assistant_message: "assistant" };
  function conversation() {
    const box = $("conversation");
    const panel = $("conversation-panel");
    box.textContent = "";
    const items = P.conversation || [];
    panel.hidden = !items.length;
    $("conversation-id").textContent = P.conversation_id || "";
    let shown = 0;
    const more = el("button", null, "show more");
    more.type = "button";
    const add = () => {
      const stop = Math.min(items.length, shown + 300);
      for (; shown < stop; shown++) {
        const it = items[shown];
        const d = el("div", "turn " + it.type);
        d.appendChild(el("span", "who", WHO[it.type] + " \u00b7 +" + (it.t_ms < 1000 ? it.t_ms + "ms" : fmtUs(it.t_ms * 1000))));
        if (it.text !== undefined) d.appendChild(el("div", "body iso", it.text));
        else if (it.step !== null && it.step !== undefined && steps[it.step]) {
          const s = steps[it.step];
          const body = el("div", "body");
          body.appendChild(stepLink(clip(s.label) + (it.type === "tool_result" ? " \u2192 " + s.state : "(\u2026)"), s.id));
          d.appendChild(body);
        }
        box.appendChild(d);
      }
      if (shown < items.length) box.appendChild(more); else more.remove();
    };
    more.addEventListener("click", () => { more.remove(); add(); });
    add();
  }

  // ---------- keyboard ----------
  function listKeys(host, rows, isTree) {
    host.addEventListener("keydown", (e) => {
      const list = rows();
      if (!list.length) return;
      let i = list.indexOf(sel);
      const page = Math.max(1, Math.floor(host.clientHeight / ROW) - 1);
      if (e.key === "ArrowDown") i = Math.min(list.length - 1, i + 1);
      else if (e.key === "ArrowUp") i = Math.max(0, i < 0 ? 0 : i - 1);
      else if (e.key === "PageDown") i = Math.min(list.length - 1, i + page);
      else if (e.key === "PageUp") i = Math.max(0, i - page);
      else if (e.key === "Home") i = 0;
      else if (e.key === "End") i = list.length - 1;
      else if (e.key === "Enter") { if (sel >= 0) $("detail").focus(); e.preventDefault(); return; }
      else if (isTree && (e.key === "ArrowLeft" || e.key === "ArrowRight") && sel >= 0) {
        if (e.key === "ArrowLeft" && kids[sel].length && !collapsed.has(sel)) { collapsed.add(sel); buildTree(); }
        else if (e.key === "ArrowLeft" && steps[sel].parent !== null && steps[sel].parent !== undefined) { select(steps[sel].parent, true); }
        else if (e.key === "ArrowRight" && collapsed.has(sel)) { collapsed.delete(sel); buildTree(); }
        else if (e.key === "ArrowRight" && kids[sel].length) select(kids[sel][0], true);
        tree.redraw();
        e.preventDefault();
        return;
      } else return;
      e.preventDefault();
      select(list[Math.max(0, i)], true);
    });
  }

  function rowClick(host, isTree) {
    host.addEventListener("click", (e) => {
      const r = e.target.closest(".row");
      if (!r) return;
      const k = Number(r.dataset.step);
      if (isTree && e.target.dataset.twist && kids[k].length) {
        if (collapsed.has(k)) collapsed.delete(k); else collapsed.add(k);
        buildTree();
        return;
      }
      select(k, true);
      host.focus({ preventScroll: true });
    });
  }

  function setAll(collapse) {
    collapsed = new Set();
    if (collapse) for (let k = 0; k < steps.length; k++) if (kids[k].length) collapsed.add(k);
    buildTree();
  }

  function download() {
    // The shown trace's page document (schema "page").
    const blob = new Blob([JSON.stringify(P, null, 2)], { type: "application/json" });
    const a = el("a");
    a.href = URL.createObjectURL(blob);
    a.download = "trace-" + (P.trace_id || "empty") + ".json";
    doc.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  }

  // ---------- live ----------
  // "live" says the run is still running (a step has not ended) and the page follows it; a run that ended
  // says nothing (the page still follows its trace: a late span shows). A failed update always says so.
  // The stream's state is also in the badge's data-stream (open, reconnecting, failed).
  let streamState = "";
  let streamProblem = "";
  function liveBadge() {
    const badge = $("live");
    badge.dataset.stream = streamState;
    const ongoing = Boolean(P && P.live && running.length);
    badge.hidden = streamState === "failed" ? false : !(ongoing && (streamState === "open" || streamState === "reconnecting"));
    badge.className = streamState === "open" && !badge.hidden ? "on" : "";
    badge.textContent = streamState === "failed" ? "live: update failed (" + streamProblem + ")" : streamState === "reconnecting" ? "live: reconnecting" : "live";
  }
  function live() {
    const l = config.live;
    const badge = $("live");
    if (!l) { badge.hidden = true; return; }
    if (l.list_url) C.topBar("traces"); // served by toolspan serve: its bar
    if (config.control) learnWho(); // what this tab's token may do
    let busy = false;
    let again = false;
    let es = null;
    const refresh = () => {
      if (busy) { again = true; return; }
      busy = true;
      C.api(l.data_url)
        .then(([status, data]) => {
          if (status !== 200) throw new Error("HTTP " + status + ((data && data.error) ? ": " + data.error : ""));
          ungate();
          setData(data, true);
          badge.dataset.updates = String(Number(badge.dataset.updates || "0") + 1);
          if (streamState === "failed") streamState = es ? "open" : "";
          liveBadge();
          if (!es) follow();
          else if (l.list_url) C.refreshInboxCount(); // the run changed: maybe a call began or stopped waiting
        })
        .catch((e) => { if (e instanceof C.Unauthorized) gate(refresh, e); else { streamState = "failed"; streamProblem = e.message; liveBadge(); } })
        .finally(() => { busy = false; if (again) { again = false; refresh(); } });
    };
    const follow = () => {
      es = new EventSource(C.streamUrl(l.stream_url));
      es.onopen = () => { streamState = "open"; liveBadge(); };
      // Unnamed events, and the names a trace's event stream uses (act/observe, the progress stream).
      LIVE_EVENTS.forEach((name) => es.addEventListener(name, refresh));
      es.onerror = () => { streamState = "reconnecting"; liveBadge(); };
    };
    setInterval(() => { if (running.length) clockTick(true); }, 1000);
    // A page served without its data (asked for without the token) reads it first, with the tab's token.
    if (l.fetch_first) refresh(); else follow();
  }

  // The token page in place of the trace page, until a token the server takes is given.
  function gate(then, why) {
    doc.body.classList.add("gated");
    doc.body.dataset.ready = "1";
    C.askToken($("gate"), why, () => {
      ungate();
      if (config.live.list_url) C.topBar("traces");
      if (config.control) { C.forgetWho(); learnWho(); }
      then();
    });
  }
  function ungate() {
    if (!doc.body.classList.contains("gated")) return;
    doc.body.classList.remove("gated");
    $("gate").textContent = "";
  }

  // The first call waiting for an approval is selected when the page opens on none: its details show what
  // it waits for (and the buttons that decide it).
  let autoSelected = false;
  function autoSelect() {
    if (autoSelected || sel >= 0 || location.hash.length > 1) return;
    const k = steps.findIndex((s) => s.state === "AWAITING_APPROVAL");
    if (k < 0) return;
    autoSelected = true;
    select(k, false);
  }

  // ---------- start ----------
  const timeline = VList($("timeline"), renderTimelineRow, (i) => tlRows[i] === sel, "option", 18);
  const tree = VList($("tree"), renderTreeRow, (i) => treeRows[i] === sel, "treeitem", 0);
  listKeys($("timeline"), () => tlRows, false);
  listKeys($("tree"), () => treeRows, true);
  rowClick($("timeline"), false);
  rowClick($("tree"), true);
  let searchTimer = 0;
  $("search").addEventListener("input", (e) => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => { filter.text = e.target.value.trim().toLowerCase(); applyFilter(); }, steps.length > 2000 ? 150 : 0);
  });
  $("search").addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === "ArrowDown") { filter.text = e.target.value.trim().toLowerCase(); applyFilter(); $("timeline").focus(); if (tlRows.length) select(tlRows[0], true); e.preventDefault(); } });
  $("tools").addEventListener("change", (e) => { filter.tool = e.target.value; applyFilter(); });
  $("audit-only").addEventListener("change", (e) => { filter.flagged = e.target.checked; applyFilter(); });
  $("trace").addEventListener("change", (e) => { showTrace(Number(e.target.value), false); history.replaceState(null, "", "#"); });
  $("expand-all").addEventListener("click", () => setAll(false));
  $("collapse-all").addEventListener("click", () => setAll(true));
  $("download").addEventListener("click", download);
  window.addEventListener("resize", fitHeights);
  $("crit").addEventListener("change", (e) => { doc.body.classList.toggle("crit-on", e.target.checked); });
  $("theme").addEventListener("click", () => {
    const root = doc.documentElement;
    const dark = root.dataset.theme ? root.dataset.theme === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
    root.dataset.theme = dark ? "light" : "dark";
  });
  doc.addEventListener("keydown", (e) => {
    if (e.key === "/" && doc.activeElement !== $("search")) { e.preventDefault(); $("search").focus(); }
  });
  window.addEventListener("hashchange", () => { goTo(hashId()); });
  setData(readJSON("ts-data") || [], false);
  if (location.hash.length > 1) goTo(hashId());
  live();
  doc.body.dataset.ready = "1";
  performance.mark("toolspan-ready");
  requestAnimationFrame(() => performance.mark("toolspan-frame"));
  // A small read-only handle for scripts and tests: select a step by span or execution id.
  window.toolspanPage = Object.freeze({
    goTo,
    selected: () => (sel >= 0 ? steps[sel].id : null),
    expandAll: () => setAll(false),
    collapseAll: () => setAll(true),
  });
})();
