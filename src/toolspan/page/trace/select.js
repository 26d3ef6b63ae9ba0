// select.js: the selection, linked between the timeline, the tree and the details; the deep link
// (#exec_<id>); moving with the keyboard and the mouse.

/**
 * Select step k (-1: none): both lists show it, its ancestors expand, the details follow.
 * @param {number} k
 * @param {boolean} updateHash the deep link follows
 */
function select(k, updateHash) {
  sel = k;
  if (k < 0) { timeline.redraw(); tree.redraw(); }
  if (k >= 0) {
    let i = tlRows.indexOf(k);
    if (i >= 0) { timeline.reveal(i); $("timeline").setAttribute("aria-activedescendant", "tl-" + i); } else timeline.redraw();
    /** @type {number | null} */
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
/** @type {string | null} */
let hashWanted = null;
/** @param {string} h */
function setHash(h) {
  if (hashWanted === null) setTimeout(() => { if (hashWanted !== null && location.hash !== hashWanted) history.replaceState(null, "", hashWanted); hashWanted = null; }, 0);
  hashWanted = h;
}

/** The id the address's fragment names. */
function hashId() {
  try { return decodeURIComponent(location.hash.slice(1)); } catch (e) { return location.hash.slice(1); }
}

/**
 * Show and select the step with this span or execution id (in whichever trace holds it).
 * @param {string} id
 * @returns {boolean} whether the page holds it
 */
function goTo(id) {
  const hit = whereIs(id);
  if (!hit) return false;
  if (hit[0] !== cur) showTrace(hit[0], false);
  select(hit[1], true);
  return true;
}

/**
 * A link to the step with this span or execution id.
 * @param {string} text
 * @param {string} id
 * @returns {HTMLElement}
 */
function stepLink(text, id) {
  return actionLink(text, () => { goTo(id); $("detail").focus(); });
}

/**
 * Show trace pi, select its step si, focus the details.
 * @param {number} pi
 * @param {number} si
 */
function jump(pi, si) {
  if (pi !== cur) showTrace(pi, false);
  select(si, true);
  $("detail").focus();
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

/**
 * Arrows, Page Up/Down, Home/End and Enter in a list; Left/Right collapse and expand in the tree.
 * @param {HTMLElement} host
 * @param {() => number[]} rows
 * @param {boolean} isTree
 */
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
      const parent = steps[sel].parent;
      if (e.key === "ArrowLeft" && kids[sel].length && !collapsed.has(sel)) { collapsed.add(sel); buildTree(); }
      else if (e.key === "ArrowLeft" && parent !== null && parent !== undefined) { select(parent, true); }
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

/**
 * A click on a row selects its step (on the tree's arrow: collapses or expands it).
 * @param {HTMLElement} host
 * @param {boolean} isTree
 */
function rowClick(host, isTree) {
  host.addEventListener("click", (e) => {
    const target = /** @type {HTMLElement} */ (e.target);
    const r = /** @type {HTMLElement | null} */ (target.closest(".row"));
    if (!r) return;
    const k = Number(r.dataset.step);
    if (isTree && target.dataset.twist && kids[k].length) { toggle(k); return; }
    select(k, true);
    host.focus({ preventScroll: true });
  });
}
