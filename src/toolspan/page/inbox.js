"use strict";
// The inbox of toolspan serve: every tool call waiting for a decision, across runs (the config's
// urls.waiting), each with Allow, Deny and Edit for a decider's token (urls.decisions), linked to its run's
// page (urls.trace, "{trace_id}" in it replaced). Every URL comes from the page's config. A decision names the exact
// call (its execution id) and echoes the digest of the arguments shown, so it is given to that call only,
// with the arguments the person saw. Data is only ever written through text nodes and DOM properties.
(function () {
  /**
   * A decision as the server answers it.
   * @typedef {{decision: string, by?: string | null, note?: string | null, arguments?: unknown, decided_at?: number | null}} Decision
   * A waiting call as the inbox lists it.
   * @typedef {{
   *   execution_id: string, trace_id: string, call_id?: string | null, tool: string, arguments?: unknown,
   *   arguments_sha256: string, agent?: string | null, service?: string | null, run?: string | null,
   *   waiting_since: number, decision: Decision | null
   * }} Entry
   * What this tab holds of a call: its editor, its note, the answer to its request.
   * @typedef {{editing: boolean, text: string, error: string | null, note: string, message: string | null, ok: boolean, denied: boolean, busy: boolean}} Local
   * @typedef {{waiting: string, decisions: string, trace: string}} InboxUrls
   */
  const C = window.toolspanCommon;
  const { el } = C;
  const doc = document;
  /** @type {InboxUrls} */
  const URLS = C.config.urls;
  /**
   * The element of the page with this id (the page or build() made it).
   * @param {string} id
   * @returns {HTMLElement}
   */
  const $ = (id) => /** @type {HTMLElement} */ (doc.getElementById(id));
  const app = $("app");
  const POLL_MS = 2000;
  const KEEP_DECIDED_MS = 60000; // a call decided in this tab stays shown, with its answer, this long

  /** @type {Entry[]} */
  let entries = [];
  /** @type {{name: string | null, can: string[]}} */
  let who = { name: null, can: [] };
  /** @type {Map<string, Local>} execution id -> what this tab holds of the call */
  const local = new Map();
  /** @type {Map<string, {entry: Entry, at: number, decision: Decision}>} decided in this tab, maybe gone from the inbox */
  const decidedHere = new Map();
  let built = false;
  let timer = 0;

  /**
   * @param {string} id
   * @returns {Local}
   */
  function state(id) {
    let s = local.get(id);
    if (!s) { s = { editing: false, text: "", error: null, note: "", message: null, ok: true, denied: false, busy: false }; local.set(id, s); }
    return s;
  }

  function build() {
    built = true;
    app.textContent = "";
    const head = el("div", "listhead");
    head.append(el("h1", null, "Inbox"));
    const sub = el("p", "sub");
    sub.id = "summary";
    head.append(sub);
    const notice = el("p", "notice");
    notice.id = "notice";
    notice.hidden = true;
    const list = el("div", "cards");
    list.id = "cards";
    const done = el("div", "cards decided-here");
    done.id = "decided-here";
    const empty = el("div", "empty");
    empty.id = "empty";
    empty.hidden = true;
    empty.append(el("h2", null, "No call waits for a decision"));
    empty.append(el("p", null, "A tool call gated by toolspan.ServerApprover shows here while it waits, when its application exports pending records to this server (TOOLSPAN_PENDING_SPANS=true, or =all to see the whole run live). Without them the call never shows, and the application waits until its timeout."));
    const problem = el("p", "problem");
    problem.id = "problem";
    problem.hidden = true;
    app.append(head, notice, problem, list, empty, done);
  }

  function canDecide() { return who.can.indexOf("decide") >= 0; }

  // To a token that may not decide: a field taking a decider's token (it reads too: it becomes the tab's).
  /** @param {HTMLElement} box */
  function deciderField(box) {
    box.append(el("span", null, (C.token() ? "This tab's token may read, not decide. " : "") + "To Allow, Deny or Edit, give a decider's token (toolspan serve --decider NAME=TOKEN): "));
    box.append(C.tokenForm({ field: "decider-token", button: "decider-token-go" }, "A decider's token", "Use it", () => { box.textContent = ""; start(); }, "inline"));
  }

  function render() {
    if (!built) build();
    const now = Date.now();
    $("summary").textContent = entries.length
      ? entries.length + (entries.length === 1 ? " call waits" : " calls wait") + " for a decision, oldest first."
      : "Calls waiting for a decision show here, oldest first.";
    const notice = $("notice");
    notice.hidden = canDecide() || !entries.length;
    if (!notice.hidden && !notice.firstChild) deciderField(notice);
    $("empty").hidden = entries.length > 0;
    const list = $("cards");
    const focused = doc.activeElement && doc.activeElement.closest ? /** @type {HTMLElement | null} */ (doc.activeElement.closest(".card")) : null;
    const keep = focused ? focused.dataset.execution : null;
    const keepId = doc.activeElement ? doc.activeElement.id : null;
    list.textContent = "";
    entries.forEach((e, i) => list.appendChild(card(e, i, now)));
    // What this tab decided stays in sight with its answer once the call leaves the inbox (it went on).
    const waitingIds = new Set(entries.map((x) => x.execution_id));
    const done = $("decided-here");
    done.textContent = "";
    decidedHere.forEach((d, id) => { if (!waitingIds.has(id)) done.appendChild(decidedCard(d.entry, d.decision)); });
    if (keep && keepId) { const again = doc.getElementById(keepId); if (again) again.focus(); }
  }

  /**
   * @param {Entry} e
   * @param {number} i
   * @param {number} now
   */
  function card(e, i, now) {
    const s = state(e.execution_id);
    const box = el("article", "card");
    box.dataset.execution = e.execution_id;
    box.id = "call-" + i;
    const top = el("div", "cardtop");
    const h = el("h2", "tool iso", e.tool);
    const since = el("span", "since", "waiting " + C.fmtMs(Math.max(0, now - e.waiting_since)));
    since.dataset.since = String(e.waiting_since);
    since.title = "since " + C.fmtWhen(e.waiting_since);
    top.append(el("span", "badge s-AWAITING_APPROVAL", "Awaiting approval"), h, since);
    box.appendChild(top);
    box.appendChild(runOf(e));
    argumentsOf(box, e, e.decision);
    if (e.decision) {
      const d = e.decision;
      box.appendChild(el("p", "decided", "Decided: " + d.decision + (d.by ? " by " + d.by : "") + (d.note ? " \u2014 " + d.note : "") + ". The application picks it up while it waits."));
    } else if (canDecide()) {
      box.appendChild(controls(e, s));
    }
    if (s.message) box.appendChild(resultOf(s));
    return box;
  }

  // The line naming the call's run as the trace list names it (what was asked, else its root's name),
  // linked to the run's page on this call, with the agent, service and model call id.
  /** @param {Entry} e */
  function runOf(e) {
    const meta = el("div", "meta");
    const run = el("span", "kv run");
    const link = el("a", "iso", e.run || e.trace_id);
    link.href = URLS.trace.replace("{trace_id}", encodeURIComponent(e.trace_id)) + "#" + encodeURIComponent(e.execution_id);
    link.title = "Open its run";
    run.append(el("span", "k", "run "), link);
    meta.append(run);
    /** @type {[string, string | null | undefined][]} */
    const parts = [["agent", e.agent], ["service", e.service], ["call", e.call_id]];
    parts.forEach(([k, v]) => {
      if (v === null || v === undefined || v === "") return;
      const part = el("span", "kv");
      part.append(el("span", "k", k + " "), el("span", "v iso", v));
      meta.append(part);
    });
    return meta;
  }

  // What this tab's request answered: a denial reads as one, a refusal as a problem.
  /** @param {Local} s */
  function resultOf(s) {
    const m = el("p", "result " + (!s.ok ? "problem" : s.denied ? "denied" : "ok"), s.message);
    m.setAttribute("role", "status");
    return m;
  }

  // A decision that allowed the call with other arguments than the model's.
  /**
   * @param {Decision | null} d
   * @returns {Decision | null}
   */
  function editOf(d) {
    return d && d.decision === "allow" && d.arguments !== null && d.arguments !== undefined ? d : null;
  }

  // The arguments a call has: the model's while it waits; once allowed with an edit, the edit the tool
  // receives, labelled edited (who decided, when), with the model's own beside it.
  /**
   * @param {HTMLElement} box
   * @param {Entry} e
   * @param {Decision | null} d
   */
  function argumentsOf(box, e, d) {
    const model = JSON.stringify(e.arguments === undefined ? null : e.arguments, null, 2);
    const edit = editOf(d);
    if (!edit) {
      box.appendChild(el("h3", null, "Arguments"));
      box.appendChild(el("pre", "args iso", model));
      return;
    }
    box.appendChild(el("h3", null, "Arguments (edited)"));
    const when = edit.decided_at === null || edit.decided_at === undefined ? "" : " at " + C.fmtWhen(edit.decided_at);
    box.appendChild(el("p", "edited", "Edited" + (edit.by ? " by " + edit.by : "") + when + ": the tool receives these arguments, not the model's."));
    box.appendChild(el("pre", "args iso edited-args", JSON.stringify(edit.arguments, null, 2)));
    box.appendChild(el("h3", null, "The model's arguments"));
    box.appendChild(el("pre", "args iso model-args", model));
  }

  // How a decision reads: only "allow" lets a call run; "deny", or any other word, shows as what it is.
  /** @param {string} word */
  function decided(word) { return word === "allow" ? "Allowed" : word === "deny" ? "Denied" : "Decided " + String(word); }

  /**
   * @param {Entry} e
   * @param {Decision} d
   */
  function decidedCard(e, d) {
    const s = state(e.execution_id);
    const denied = !!d && d.decision !== "allow";
    const box = el("article", "card done " + (denied ? "denied" : "allowed"));
    box.dataset.execution = e.execution_id;
    const top = el("div", "cardtop");
    top.append(el("span", "badge " + (denied ? "denied" : "allowed"), denied ? decided(d.decision) : editOf(d) ? "Allowed, edited" : "Allowed"), el("h2", "tool iso", e.tool));
    box.appendChild(top);
    box.appendChild(runOf(e));
    if (d) argumentsOf(box, e, d);
    if (s.message) box.appendChild(resultOf(s));
    if (d && d.note) {
      const note = el("p", "note-said");
      note.append(el("span", "k", "Note: "), el("span", "iso", d.note));
      box.appendChild(note);
    }
    return box;
  }

  /**
   * @param {Entry} e
   * @param {Local} s
   */
  function controls(e, s) {
    const wrap = el("div", "decide");
    const note = el("input");
    note.type = "text";
    note.className = "note";
    note.id = "note-" + e.execution_id;
    note.placeholder = "Note (optional): why";
    note.setAttribute("aria-label", "Note for " + e.tool);
    note.value = s.note;
    note.addEventListener("input", () => { s.note = note.value; });
    /** @type {(cls: string, text: string, act: () => void) => HTMLButtonElement} */
    const button = (cls, text, act) => { const b = el("button", cls, text); b.type = "button"; b.disabled = s.busy; b.addEventListener("click", act); return b; };
    const row = el("div", "buttons");
    row.append(
      button("allow", "Allow", () => decide(e, s, "allow")),
      button("deny", "Deny", () => decide(e, s, "deny")),
      button("edit", s.editing ? "Close editor" : "Edit\u2026", () => { s.editing = !s.editing; s.text = JSON.stringify(e.arguments === undefined ? {} : e.arguments, null, 2); s.error = null; render(); }),
    );
    row.querySelectorAll("button").forEach((b, k) => { b.id = ["allow", "deny", "edit"][k] + "-" + e.execution_id; });
    wrap.append(note, row);
    if (s.editing) {
      const area = el("textarea", "iso");
      area.id = "args-" + e.execution_id;
      area.rows = Math.min(14, Math.max(4, s.text.split("\n").length + 1));
      area.spellcheck = false;
      area.value = s.text;
      area.setAttribute("aria-label", "Edited arguments of " + e.tool);
      area.addEventListener("input", () => { s.text = area.value; });
      const go = button("allow", "Allow with these arguments", () => {
        /** @type {unknown} */
        let value;
        try { value = JSON.parse(area.value); } catch (err) { s.error = "not JSON: " + (err instanceof Error ? err.message : String(err)); render(); return; }
        if (value === null || typeof value !== "object" || Array.isArray(value)) { s.error = "the arguments must be a JSON object"; render(); return; }
        s.error = null;
        decide(e, s, "allow", value);
      });
      go.id = "send-edit-" + e.execution_id;
      const editor = el("div", "editor");
      editor.append(area, go);
      if (s.error) editor.append(el("p", "problem", s.error));
      wrap.appendChild(editor);
    }
    return wrap;
  }

  /**
   * @param {Entry} e
   * @param {Local} s
   * @param {string} decision
   * @param {unknown} [args]
   */
  function decide(e, s, decision, args) {
    /** @type {Record<string, unknown>} */
    const body = { execution_id: e.execution_id, trace_id: e.trace_id, decision: decision, shown: e.arguments_sha256 };
    if (args !== undefined) body.arguments = args;
    if (s.note.trim()) body.note = s.note.trim();
    s.busy = true;
    s.message = (args !== undefined ? "allowing with edited arguments" : decision === "allow" ? "allowing" : "denying") + "\u2026";
    s.ok = true;
    s.denied = false;
    render();
    C.api(URLS.decisions, { method: "POST", body: body }).then(([status, doc]) => {
      s.busy = false;
      if (status >= 200 && status < 300) {
        s.ok = true;
        s.denied = doc.decision !== "allow";
        s.editing = false;
        s.message = decided(doc.decision) + (doc.by ? " by " + doc.by : "") + ".";
        decidedHere.set(e.execution_id, { entry: e, at: Date.now(), decision: doc });
      } else {
        s.ok = false;
        s.message = "Refused (" + status + "): " + ((doc && doc.error) || "");
      }
      poll();
    }).catch((err) => { s.busy = false; s.ok = false; s.message = "Failed: " + err; render(); });
  }

  let generation = 0; // one polling loop at a time (a token given again starts a new one)
  function poll() {
    clearTimeout(timer);
    const mine = generation;
    C.api(URLS.waiting).then(([status, body]) => {
      const p = $("problem");
      if (status !== 200) {
        if (!built) build();
        p.hidden = false;
        p.textContent = (body && body.error) || "HTTP " + status;
        return;
      }
      entries = body.waiting;
      C.showInboxCount(entries.length);
      if (!built) build();
      $("problem").hidden = true;
      const live = new Set(entries.map((x) => x.execution_id));
      const now = Date.now();
      for (const [id, d] of Array.from(decidedHere)) if (now - d.at > KEEP_DECIDED_MS) decidedHere.delete(id);
      for (const id of Array.from(local.keys())) if (!live.has(id) && !decidedHere.has(id)) local.delete(id);
      const editing = Array.from(local.values()).some((x) => x.editing) && doc.activeElement && doc.activeElement.tagName === "TEXTAREA";
      if (!editing) render();
    }).catch((err) => {
      if (err instanceof C.Unauthorized) { built = false; clearTimeout(timer); C.askToken(app, err, start); return; }
      const p = doc.getElementById("problem");
      if (p) { p.hidden = false; p.textContent = "Could not load the inbox: " + err; }
    }).finally(() => {
      doc.body.dataset.ready = "1";
      if (mine === generation && !doc.getElementById("token-page")) timer = setTimeout(poll, POLL_MS);
    });
  }

  function tick() {
    const now = Date.now();
    doc.querySelectorAll(".since").forEach((n) => { n.textContent = "waiting " + C.fmtMs(Math.max(0, now - Number(/** @type {HTMLElement} */ (n).dataset.since))); });
  }

  function start() {
    generation += 1;
    C.topBar("inbox");
    C.whoami().then((w) => { who = w; render(); poll(); }, (err) => {
      if (err instanceof C.Unauthorized) { built = false; C.askToken(app, err, start); }
    });
  }
  setInterval(tick, 1000);
  start();
})();
