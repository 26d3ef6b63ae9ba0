// controls.js: deciding and cancelling through the server. Deciding needs a decider token (toolspan serve
// --decider NAME=TOKEN): the page asks the server what the tab's token may do (the config's whoami_url) and
// shows the buttons, with the decider's name, only to a token that may decide; to another it offers to take
// a decider's token instead (which reads too). The token is the tab's own (common.js: session storage only,
// sent in the Authorization header, never in a URL or a cookie). A decision names the exact call (its
// execution id and trace) and the digest of the arguments the page shows (arguments_sha256), so it is given
// to that call only, and only while it shows them.

/**
 * @typedef {{name: string | null, can: string[]}} Who
 * @typedef {{id: string, text: string, error: string | null}} Editing
 * @typedef {{id: string, state: string, text: string, ok: boolean}} Message
 */

/** @type {{who: Who | null, editing: Editing | null, confirming: string | null, note: string, message: Message | null}} */
const control = { who: null, editing: null, confirming: null, note: "", message: null };

function decider() { return Boolean(control.who && control.who.can.indexOf("decide") >= 0); }

function learnWho() {
  C.whoami().then((w) => { control.who = w; detail(); }, () => { control.who = { name: null, can: [] }; detail(); });
}

/**
 * What the page says under the buttons of step s.
 * @param {Step} s
 * @param {string} text
 * @param {boolean} ok
 */
function say(s, text, ok) { control.message = { id: s.id, state: s.state, text: text, ok: ok }; detail(); }

/**
 * @param {string} url
 * @param {Record<string, unknown>} body
 * @param {Step} s
 * @param {string} what
 */
function post(url, body, s, what) {
  say(s, what + "\u2026", true);
  C.api(url, { method: "POST", body: body }).then(([status, answer]) => {
    const ok = status >= 200 && status < 300;
    if (status === 401) { C.setToken(null); C.forgetWho(); learnWho(); }
    if (ok) { control.editing = null; control.confirming = null; control.note = ""; }
    const done = answer && typeof answer.decision === "string" ? answer.decision + (answer.by ? " by " + answer.by : "") : what + (answer && answer.by ? " by " + answer.by : "");
    say(s, ok ? done + ": sent; the call's new state shows here when it arrives" : "refused (" + status + "): " + ((answer && answer.error) || ""), ok);
  }).catch((e) => say(s, what + " failed: " + e, false));
}

/**
 * @param {Step} s
 * @returns {Record<string, unknown>}
 */
function target(s) { return { execution_id: s.execution_id, trace_id: P.trace_id }; }

/**
 * @param {ControlConfig} c
 * @param {Step} s
 * @param {string} decision
 * @param {Record<string, unknown>} [args] edited arguments
 */
function decide(c, s, decision, args) {
  const body = Object.assign(target(s), { decision: decision, shown: s.arguments_sha256 });
  if (args !== undefined) Object.assign(body, { arguments: args });
  if (control.note.trim()) Object.assign(body, { note: control.note.trim() });
  post(c.decisions_url, body, s, args !== undefined ? "allow with edited arguments" : decision);
}

/**
 * @param {ControlConfig} c
 * @param {Step} s
 */
function cancel(c, s) {
  const body = target(s);
  if (control.note.trim()) body.note = control.note.trim();
  post(c.cancels_url, body, s, "cancel");
}

/**
 * @param {HTMLElement} bar
 * @param {HTMLElement} box
 * @param {string} note
 */
function tokenField(bar, box, note) {
  if (note) bar.appendChild(el("span", "meta", note));
  bar.appendChild(C.tokenForm({ field: "control-token", button: "control-token-save" }, "A decider's token", "Use it", () => { control.who = null; learnWho(); }, "control-token"));
  box.appendChild(bar);
}

/**
 * @param {HTMLElement} box
 * @param {Message | null} m
 */
function result(box, m) { if (m) { const p = el("p", m.ok ? "control-ok" : "control-error", m.text); p.id = "control-result"; box.appendChild(p); } }

/**
 * The buttons of a tool call in the details: Allow, Deny and Edit for a waiting call, Cancel for a running
 * one (served pages only, to a decider's token).
 * @param {HTMLElement} box
 * @param {Step} s
 */
function controls(box, s) {
  const c = config.control;
  if (!c || s.kind !== "tool" || !config.live) return;
  const waiting = s.state === "AWAITING_APPROVAL";
  const isRunning = s.state === "RUNNING";
  // A message stays while the call is in the state it was sent in (then its new state says the rest).
  const m = control.message && control.message.id === s.id && control.message.state === s.state ? control.message : null;
  if (!waiting && !isRunning) { result(box, m); return; }
  const bar = el("div", "control");
  bar.id = "control";
  const who = control.who;
  if (!who) { bar.appendChild(el("span", "meta", "checking what this tab's token may do\u2026")); box.appendChild(bar); return; }
  if (!decider()) {
    tokenField(bar, box, (C.token() ? "This tab's token may read, not decide. " : "") + (waiting ? "To decide this call: " : "To cancel this call: "));
    result(box, m);
    return;
  }
  const me = el("span", "meta", "deciding as " + (who.name || "?"));
  me.id = "control-by";
  bar.appendChild(me);
  const note = el("input");
  note.id = "control-note";
  note.type = "text";
  note.placeholder = waiting ? "Note (optional): why" : "Note (optional): why cancel";
  note.setAttribute("aria-label", "Note");
  note.value = control.note;
  note.addEventListener("input", () => { control.note = note.value; });
  /** @type {(id: string, text: string, cls: string | null, onClick: () => void) => HTMLElement} */
  const button = (id, text, cls, onClick) => { const b = el("button", cls, text); b.type = "button"; b.id = id; b.addEventListener("click", onClick); return b; };
  const row = el("div", "control-buttons");
  if (waiting) {
    row.append(
      button("control-allow", "Allow", "allow", () => decide(c, s, "allow")),
      button("control-deny", "Deny", "deny", () => decide(c, s, "deny")),
      button("control-edit", "Edit\u2026", null, () => { control.editing = { id: s.id, text: JSON.stringify(s.input === undefined ? {} : s.input, null, 2), error: null }; detail(); }),
    );
  } else if (control.confirming === s.id) {
    row.append(
      el("span", "confirm", "Cancel this running call?"),
      button("control-cancel-yes", "Yes, cancel it", "deny", () => cancel(c, s)),
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
      /** @type {unknown} */
      let value;
      try { value = JSON.parse(area.value); } catch (e) { ed.error = "not JSON: " + /** @type {Error} */ (e).message; detail(); return; }
      if (value === null || typeof value !== "object" || Array.isArray(value)) { ed.error = "the arguments must be a JSON object"; detail(); return; }
      ed.error = null;
      decide(c, s, "allow", /** @type {Record<string, unknown>} */ (value));
    });
    const wrap = el("div", "control-edit");
    wrap.append(area, go);
    if (ed.error) wrap.appendChild(el("p", "control-error", ed.error));
    box.appendChild(wrap);
  }
  result(box, m);
}
