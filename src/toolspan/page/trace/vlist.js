// vlist.js: the virtual list the timeline and the tree are. Fixed-height rows; only the rows in view (plus
// OVERSCAN) exist. A row is re-rendered only when the index it shows or the list's version (data, filter,
// collapse) changes; selection just flips an attribute.

/**
 * @typedef {HTMLElement & {_idx?: number, _ver?: number}} Row
 * @typedef {{set(count: number): void, redraw(): void, resize(): void, reveal(i: number): void}} VirtualList
 */

/**
 * @param {HTMLElement} host the scrolling element
 * @param {(r: Row, idx: number) => void} render fills row ``r`` with the list's item ``idx``
 * @param {(idx: number) => boolean} selected
 * @param {string} role the rows' ARIA role
 * @param {number} offset height of the sticky header above the rows
 * @returns {VirtualList}
 */
function VList(host, render, selected, role, offset) {
  const spacer = el("div", "spacer");
  host.appendChild(spacer);
  /** @type {Row[]} */
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
    while (pool.length > need) /** @type {Row} */ (pool.pop()).remove();
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
