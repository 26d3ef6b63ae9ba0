// detail.js: the details of the selected step: state, ids and timing, links, the error or why it was
// denied or cancelled, arguments and result as foldable JSON with copy buttons, thoughts, approvals,
// events, attributes.

/**
 * @param {string} text
 * @param {HTMLElement} btn
 */
function copyText(text, btn) {
  const done = () => { const old = btn.textContent; btn.textContent = "copied"; setTimeout(() => { btn.textContent = old; }, 900); };
  if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(text).then(done, () => fallbackCopy(text, done));
  else fallbackCopy(text, done);
}
/**
 * @param {string} text
 * @param {() => void} done
 */
function fallbackCopy(text, done) {
  const t = el("textarea");
  t.value = text;
  doc.body.appendChild(t);
  t.select();
  try { doc.execCommand("copy"); done(); } catch (e) { /* nothing to do */ }
  t.remove();
}
/**
 * @param {() => string} getText
 * @returns {HTMLElement}
 */
function copyBtn(getText) {
  const b = el("button", null, "copy");
  b.type = "button";
  b.addEventListener("click", () => copyText(getText(), b));
  return b;
}

/**
 * A JSON value as foldable nodes (an object's keys or an array's items made when first opened, 1,000 at a
 * time).
 * @param {unknown} v
 * @param {string | null} key
 * @param {boolean} open
 * @returns {HTMLElement}
 */
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
  const obj = /** @type {Record<string, unknown>} */ (v);
  const keys = arr ? [] : Object.keys(obj);
  const size = arr ? v.length : keys.length;
  /** @type {(j: number) => HTMLElement} */
  const child = (j) => (arr ? jsonNode(v[j], null, false) : jsonNode(obj[keys[j]], keys[j], false));
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
    for (let j = 0; j < count; j++) d.appendChild(child(j));
    if (size > LIMIT) {
      const more = el("button", null, "show " + (size - LIMIT) + " more");
      more.type = "button";
      more.addEventListener("click", () => {
        more.remove();
        for (let j = LIMIT; j < size; j++) d.appendChild(child(j));
      });
      d.appendChild(more);
    }
  };
  d.addEventListener("toggle", () => { if (d.open) fill(); });
  if (open) { d.open = true; fill(); }
  return d;
}

/**
 * @param {unknown} v
 * @returns {HTMLElement}
 */
function jsonBlock(v) {
  const box = el("div", "json");
  box.appendChild(jsonNode(v, null, true));
  box.querySelectorAll(":scope > details > details").forEach((d) => { /** @type {HTMLDetailsElement} */ (d).open = true; });
  return box;
}

/**
 * What a call's edited arguments say: the body received them, who decided the edit and when.
 * @param {Edited} edited
 * @returns {HTMLElement}
 */
function editedNote(edited) {
  const p = el("p", "edited", "Edited" + (edited.by ? " by " + edited.by : "") + (edited.t_us !== null && edited.t_us !== undefined ? " at +" + fmtUs(edited.t_us) : "") + ": the tool received these arguments, not the model's (below).");
  p.dataset.by = edited.by === null || edited.by === undefined ? "" : String(edited.by);
  return p;
}

/**
 * @param {HTMLElement} box
 * @param {string} title
 * @param {() => string} [copyGet]
 */
function section(box, title, copyGet) {
  const h = el("h4", null, title);
  if (copyGet) h.appendChild(copyBtn(copyGet));
  box.appendChild(h);
}

/**
 * Rows of names and values (a value null or undefined: no row); a node, when given, shows the value.
 * @param {HTMLElement} box
 * @param {[string, unknown, (HTMLElement | null)?][]} rows
 */
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

/** The details panel, for the selected step. */
/** @type {[Step | null, Step | null]} the step the details show and its parent (a live update leaves the
 * details as they are while both are the same objects) */
let detailShown = [null, null];
/** Set while a live update is applied: the details are drawn again only if their step or its parent changed. */
let detailKept = false;

function detail() {
  const box = $("detail");
  const shown = sel >= 0 && sel < steps.length ? steps[sel] : null;
  const up = shown && shown.parent !== null && shown.parent !== undefined ? steps[shown.parent] || null : null;
  if (detailKept && shown !== null && shown === detailShown[0] && up === detailShown[1]) return; // (folds, scroll and answers stay)
  detailShown = [shown, up];
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
  const line = el("div", "meta");
  line.append(el("span", null, s.kind + " \u00b7 span "), el("span", "iso", s.name));
  box.appendChild(line);
  const findings = s.policy_findings;
  if (findings) {
    section(box, "Policy", () => JSON.stringify(findings, null, 2));
    findings.forEach((f) => box.appendChild(findingLine(f, "div", true)));
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
    ["flags", /** @type {const} */ (["orphan", "cycle", "duplicate"]).filter((f) => s[f] && !(f === "orphan" && P.live)).join(", ") || null],
  ]);
  if (s.from || (s.subplans && s.subplans.length)) {
    section(box, "Links");
    const links = el("div", "links");
    if (s.from) {
      const t = whereIs(s.from);
      links.appendChild(t ? stepLink("\u2191 started by " + clip(pages[t[0]].steps[t[1]].label), s.from) : el("span", "iso", "started by " + s.from + " (not in this file)"));
    }
    (s.subplans || []).forEach((id) => {
      const t = whereIs(id);
      if (t) links.appendChild(stepLink("\u2193 sub-plan " + clip(pages[t[0]].steps[t[1]].label), id));
    });
    box.appendChild(links);
  }
  if (s.truncated) box.appendChild(el("p", "trunc", "Some values of this step were truncated when recorded (marked \u201c...[truncated\u201d)."));
  const error = s.error;
  if (error) {
    // A denial or a cancellation is how the call ended, not an error: said plainly, not in red.
    const outcome = s.state === "DENIED" ? "Denied" : s.state === "CANCELLED" ? "Cancelled" : null;
    section(box, outcome || "Error", () => JSON.stringify(error, null, 2));
    const e = el("div", outcome ? "outcome" : "error");
    if (error.type) e.appendChild(el("pre", "text iso", error.type));
    if (error.message) e.appendChild(el("pre", "text iso", error.message));
    if (error.stack) e.appendChild(el("pre", "text iso", error.stack));
    box.appendChild(e);
  }
  for (const [f, title] of /** @type {const} */ ([["input", s.kind === "tool" ? "Arguments" : "Input"], ["output", s.kind === "tool" ? "Result" : "Output"]])) {
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
