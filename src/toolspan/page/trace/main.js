// main.js: the page as a whole: the data in (setData), the trace shown (showTrace), the header (title, the
// line under it, the waiting calls), the toolbar, and the start: the lists made, the listeners set, the
// embedded data shown, the live page followed. Last in the page's script: it runs the others.

/**
 * The page's data, new: one page document or a list of them; ``keep``: the trace shown, the selection and
 * the collapsed steps stay (a live update).
 * @param {PageDoc | PageDoc[]} data
 * @param {boolean} keep
 */
function setData(data, keep) {
  const keepId = keep && sel >= 0 ? steps[sel].id : null;
  const keepTrace = keep && P !== EMPTY_PAGE ? P.trace_id : null;
  // The collapsed steps by span id: a step inserted before them moves their index.
  const shutIds = keep ? Array.from(collapsed, (k) => (steps[k] ? steps[k].id : "")) : [];
  pages = Array.isArray(data) ? data : [data];
  byId = null; // made again when first asked (whereIs)
  const picker = field("trace");
  picker.textContent = "";
  pages.forEach((p, i) => {
    const o = el("option", null, pickerText(p));
    o.value = String(i);
    picker.appendChild(o);
  });
  picker.hidden = pages.length < 2;
  auditPanel();
  const t = Math.max(0, keepTrace ? pages.findIndex((p) => p.trace_id === keepTrace) : 0);
  if (keep) {
    /** @type {Set<number>} */
    const shut = new Set();
    shutIds.forEach((id) => { const at = whereIs(id); if (at && at[0] === t) shut.add(at[1]); });
    collapsed = shut;
    const at = keepId ? findStep(pages, keepId) : undefined;
    sel = at && at[0] === t ? at[1] : -1; // the selection by span id too, before anything is drawn
  }
  showTrace(t, keep);
  const kept = keepId ? findStep(pages, keepId) : undefined;
  if (kept) select(kept[1], false);
  autoSelect();
}

/**
 * Show trace i of the page.
 * @param {number} i
 * @param {boolean} keep the selection and the collapsed steps stay
 */
function showTrace(i, keep) {
  cur = i;
  P = pages[i] || EMPTY_PAGE;
  steps = P.steps;
  loading(Boolean(P.partial));
  field("trace").value = String(i);
  const shape = shapeOf(steps, P.duration_us);
  kids = shape.kids;
  depth = shape.depth;
  end = shape.end;
  order = shape.order;
  running = shape.running;
  clockTick(false);
  if (!keep) { collapsed = new Set(); sel = -1; }
  hay = null;
  $("title").textContent = P.title || P.trace_id || "trace";
  $("title").title = P.title || "";
  meta();
  doc.title = clip(P.title || "trace") + " \u2014 toolspan";
  toolChoices();
  legend();
  notice();
  axis();
  applyFilter();
  buildTree();
  conversation();
  if (sel >= steps.length) sel = -1;
  detail();
  if (config.live) liveBadge();
}

/**
 * A first screen (a document with ``partial``: the first steps, the whole document on its way): the rows,
 * the tree and the details are marked as loading (dimmed, ``aria-busy``) and there is nothing to download
 * yet, until the whole document replaces it.
 * @param {boolean} on
 */
function loading(on) {
  doc.body.classList.toggle("partial", on);
  ["timeline", "tree", "detail"].forEach((id) => { if (on) $(id).setAttribute("aria-busy", "true"); else $(id).removeAttribute("aria-busy"); });
  field("download").disabled = on;
}

/** The line under the title. */
function meta() {
  $("meta").textContent = metaText(P, Boolean(running.length && P.live), spanUs);
}

/** In a live page: the calls waiting for an approval, named above the timeline (each one click away). */
function notice() {
  const box = $("notice");
  box.textContent = "";
  /** @type {[Step, number][]} */
  const waiting = [];
  if (P.live) steps.forEach((s, k) => { if (s.state === "AWAITING_APPROVAL") waiting.push([s, k]); });
  box.hidden = !waiting.length;
  if (!waiting.length) return;
  const said = waiting.length === 1 ? "1 call waits for approval: " : waiting.length + " calls wait for approval: ";
  // A first screen knows its own steps only: the whole run may hold more waiting calls.
  box.append(el("span", "dot s-AWAITING_APPROVAL"), el("span", null, (P.partial ? "Among the first steps, " : "") + said));
  waiting.slice(0, 5).forEach(([s, k], i) => {
    if (i) box.append(", ");
    box.append(actionLink(clip(s.label), () => { select(k, true); $("detail").focus(); }));
  });
}

/** Download JSON: the shown trace's page document (schema "page"). */
function download() {
  const blob = new Blob([JSON.stringify(P, null, 2)], { type: "application/json" });
  const a = el("a");
  a.href = URL.createObjectURL(blob);
  a.download = "trace-" + (P.trace_id || "empty") + ".json";
  doc.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

// ---------- start ----------
const timeline = VList($("timeline"), renderTimelineRow, (i) => tlRows[i] === sel, "option", 18);
const tree = VList($("tree"), renderTreeRow, (i) => treeRows[i] === sel, "treeitem", 0);
listKeys($("timeline"), () => tlRows, false);
listKeys($("tree"), () => treeRows, true);
rowClick($("timeline"), false);
rowClick($("tree"), true);
filterControls();
field("trace").addEventListener("change", () => { showTrace(Number(field("trace").value), false); history.replaceState(null, "", "#"); });
$("expand-all").addEventListener("click", () => setAll(false));
$("collapse-all").addEventListener("click", () => setAll(true));
$("download").addEventListener("click", download);
window.addEventListener("resize", fitHeights);
field("crit").addEventListener("change", () => { doc.body.classList.toggle("crit-on", field("crit").checked); });
$("theme").addEventListener("click", C.switchTheme);
window.addEventListener("hashchange", () => { goTo(hashId()); });
setData(/** @type {PageDoc | PageDoc[]} */ (readJSON("ts-data") || []), false);
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
