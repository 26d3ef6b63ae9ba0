// timeline.js: the timeline: one row per step by start time, its columns declared once (the axis and the
// rows both read COLUMNS), the bars to scale, the clock that grows running bars, the panes' heights.

/** How a policy finding's outcome is said. @type {Record<string, string>} */
const OUTCOME = { violation: "violation", enforced: "denied", unchecked: "unchecked" };

/**
 * The name cell of a row (timeline and tree): state dot, kind, label, the policy's mark.
 * @param {Step} s
 * @param {number} k
 * @param {boolean} twisty with the tree's expand/collapse arrow
 * @returns {HTMLElement}
 */
function nameCell(s, k, twisty) {
  const name = el("span", "name");
  name.style.paddingLeft = Math.min(depth[k], 40) * 12 + "px";
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

/**
 * Step k's bar, to scale, with its wait for an approval striped.
 * @param {Step} s
 * @param {number} k
 * @returns {HTMLElement}
 */
function track(s, k) {
  const t = el("span", "track");
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
  t.appendChild(bar);
  return t;
}

/** The ticks of the time axis: five, from 0 to the time shown to scale. */
function ticks() {
  const t = el("span", "ticks");
  for (let k = 0; k <= 4; k++) {
    const tick = el("span", null, fmtUs(Math.round((spanUs * k) / 4)));
    tick.style.left = k * 25 + "%";
    if (k === 4) tick.style.transform = "translateX(-100%)";
    t.appendChild(tick);
  }
  return t;
}

/**
 * The timeline's columns, left to right: each one's cell in the axis (the sticky first line) and in a row.
 * @type {{axis: () => HTMLElement, row: (s: Step, k: number) => HTMLElement}[]}
 */
const COLUMNS = [
  { axis: () => el("span", "name"), row: (s, k) => nameCell(s, k, false) },
  { axis: () => el("span", "start"), row: (s) => el("span", "start", "+" + fmtUs(s.start_us)) },
  { axis: ticks, row: track },
  { axis: () => el("span", "dur"), row: (s) => el("span", "dur", fmtUs(s.dur_us)) },
];

/** The time axis over the bars. */
function axis() {
  const a = $("axis");
  a.textContent = "";
  a.append(...COLUMNS.map((c) => c.axis()));
}

/**
 * Fills the timeline's row idx.
 * @param {Row} r
 * @param {number} idx
 */
function renderTimelineRow(r, idx) {
  const k = tlRows[idx];
  const s = steps[k];
  r.textContent = "";
  r.dataset.step = String(k);
  r.id = "tl-" + idx;
  r.className = "row" + (s.critical ? " crit" : "") + (marks(s).length ? " flagged" : "");
  r.title = s.label.length > LABEL_MAX ? "" : s.label + " \u2014 " + s.state + " \u2014 " + fmtUs(s.dur_us);
  r.append(...COLUMNS.map((c) => c.row(s, k)));
}

/**
 * The time shown to scale again (the clock moved): running steps end now; with ``redraw``, the axis, the
 * line under the title and the bars follow when it changed.
 * @param {boolean} redraw
 */
function clockTick(redraw) {
  const s = scaleUs(P, running.length, Date.now());
  running.forEach((k) => { end[k] = s; });
  if (redraw && s !== spanUs) { spanUs = s; axis(); meta(); timeline.set(tlRows.length); return; }
  spanUs = s;
}

// At phone width the panels stack: a short list takes the height of its rows, not a fixed share. Wider,
// the timeline's pane (and the details beside it) is as tall as the run's rows, up to its share of the
// window (62vh), and never less than PANE_MIN, so the details keep room: a small run leaves no blank pane.
const narrow = matchMedia("(max-width: 760px)");
const PANE_MIN = 260;
function fitHeights() {
  /** @type {(node: HTMLElement, prop: "height" | "minHeight", value: string) => boolean} */
  const set = (node, prop, value) => { if (node.style[prop] === value) return false; node.style[prop] = value; return true; };
  /** @type {(host: HTMLElement, rows: number, head: number) => boolean} */
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
