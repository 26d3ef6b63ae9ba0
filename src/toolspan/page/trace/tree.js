// tree.js: the execution tree: its rows (the tree's pre-order without collapsed subtrees), collapse and
// expand.

/** The tree's rows again (the data or the collapsed steps changed). */
function buildTree() {
  treeRows = visibleTree(order, depth, kids, collapsed);
  tree.set(treeRows.length);
  fitHeights();
}

/**
 * Fills the tree's row idx.
 * @param {Row} r
 * @param {number} idx
 */
function renderTreeRow(r, idx) {
  const k = treeRows[idx];
  const s = steps[k];
  r.textContent = "";
  r.dataset.step = String(k);
  r.id = "tr-" + idx;
  r.className = "row" + (marks(s).length ? " flagged" : "");
  if (kids[k].length) r.setAttribute("aria-expanded", collapsed.has(k) ? "false" : "true"); else r.removeAttribute("aria-expanded");
  r.setAttribute("aria-level", String(depth[k] + 1));
  r.append(nameCell(s, k, true), el("span", "dur", fmtUs(s.dur_us)));
}

/**
 * Collapse (or expand) every step that has children.
 * @param {boolean} collapse
 */
function setAll(collapse) {
  collapsed = new Set();
  if (collapse) for (let k = 0; k < steps.length; k++) if (kids[k].length) collapsed.add(k);
  buildTree();
}

/**
 * Collapse or expand step k.
 * @param {number} k
 */
function toggle(k) {
  if (collapsed.has(k)) collapsed.delete(k); else collapsed.add(k);
  buildTree();
}
