// filter.js: which steps the timeline shows: the state chips (the legend, with their counts), the search,
// the tool filter, the audit's "only these calls".

/** The state chips under the header: one per state, with its count; a click shows only those steps. */
function legend() {
  const box = $("legend");
  box.textContent = "";
  STATES.forEach((st) => {
    const c = (P.counts || {})[st] || 0;
    if (!c && st === "PENDING") return;
    const b = el("button", c || P.partial ? null : "zero");
    b.type = "button";
    b.dataset.state = st;
    b.setAttribute("aria-pressed", filter.states.has(st) ? "true" : "false");
    b.title = "Show only " + st + " steps";
    // A first screen counts nothing yet: the whole run's counts come with its whole document.
    b.append(el("span", "dot s-" + st), el("span", null, st + " " + (P.partial ? "\u2026" : c)));
    b.addEventListener("click", () => {
      if (filter.states.has(st)) filter.states.delete(st); else filter.states.add(st);
      b.setAttribute("aria-pressed", filter.states.has(st) ? "true" : "false");
      applyFilter();
    });
    box.appendChild(b);
  });
}

/** The tool filter's choices for the shown trace (keeping the chosen tool when the trace has it). */
function toolChoices() {
  const names = toolNames(steps);
  const list = field("tools");
  list.textContent = "";
  const any = el("option", null, "all tools");
  any.value = "";
  list.appendChild(any);
  names.forEach((t) => { const o = el("option", null, clip(t)); o.value = t; list.appendChild(o); });
  list.value = names.indexOf(filter.tool) >= 0 ? filter.tool : "";
  filter.tool = list.value;
}

/**
 * Step k's search text, made once per trace shown.
 * @param {number} k
 * @returns {string}
 */
function haystack(k) {
  const cache = hay || (hay = new Array(steps.length));
  let h = cache[k];
  if (h === undefined) h = cache[k] = haystackOf(steps[k]);
  return h;
}

/** The timeline's rows again, after the filter or the data changed. */
function applyFilter() {
  tlRows = [];
  for (let k = 0; k < steps.length; k++) if (stepMatches(steps[k], filter, () => haystack(k))) tlRows.push(k);
  $("count").textContent = P.partial ? loadingText(tlRows.length, steps.length) : countText(tlRows.length, steps.length);
  timeline.set(tlRows.length);
  $("timeline-empty").hidden = tlRows.length > 0;
  fitHeights();
}

/** The search box and the tool and audit filters. */
function filterControls() {
  let searchTimer = 0;
  const search = field("search");
  const apply = () => { filter.text = search.value.trim().toLowerCase(); applyFilter(); };
  search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(apply, steps.length > 2000 ? 150 : 0);
  });
  search.addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === "ArrowDown") {
      apply();
      $("timeline").focus();
      if (tlRows.length) select(tlRows[0], true);
      e.preventDefault();
    }
  });
  field("tools").addEventListener("change", () => { filter.tool = field("tools").value; applyFilter(); });
  field("audit-only").addEventListener("change", () => { filter.flagged = field("audit-only").checked; applyFilter(); });
  doc.addEventListener("keydown", (e) => {
    if (e.key === "/" && doc.activeElement !== search) { e.preventDefault(); search.focus(); }
  });
}
