// live.js: a served page follows its trace. With the config's page_stream_url (toolspan serve), it listens
// to the trace's page stream: event "page" is the whole document (at the start, or when the stream cannot
// resume from the document the page holds), event "delta" what changed (model.js's applyDelta), each named
// by the tag of the document it gives, which the stream resumes from (the page reads data_url only when it
// was served without its data, once). A large document comes in parts: events "page-part" (no tag), each a
// slice of its steps or conversation parsed as it comes (a task each, so the tab never parses the whole at
// once), then event "page" with the rest, which puts them together (model.js's wholePage) and is applied as
// one; a connection that drops among the parts starts them over (the next one sends them all again). Else
// it listens to the trace's event stream (stream_url) and, on each burst of events, reads the trace's data
// again (data_url: one fetch at a time). Either way the selection, the collapsed steps and the scroll
// positions stay. "live" says the run is still running (a step has not ended) and the page follows it; a
// run that ended says nothing (the page still follows its trace: a late span shows). A failed update always says so. The stream's state is also in the badge's data-stream (open,
// reconnecting, failed), and the number of updates applied in its data-updates (of which, from a page
// stream, whole documents in data-pages and deltas in data-deltas; the parts received in data-parts).

/** The events that change a trace: unnamed ones, and the names a trace's event stream uses (act/observe,
 * the progress stream). */
const LIVE_EVENTS = ["message", "update", "span", "act", "observe", "progress", "tool:start", "tool:end", "tool:error", "done"];

let streamState = "";
let streamProblem = "";

function liveBadge() {
  const badge = $("live");
  badge.dataset.stream = streamState;
  const ongoing = Boolean(P.live && running.length);
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
  /** @type {EventSource | null} */
  let es = null;
  const refresh = () => {
    if (busy) { again = true; return; }
    busy = true;
    C.api(l.data_url)
      .then(([status, data]) => {
        if (status !== 200) throw new Error("HTTP " + status + ((data && data.error) ? ": " + data.error : ""));
        ungate();
        setData(/** @type {PageDoc | PageDoc[]} */ (data), true);
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
    const stream = new EventSource(C.streamUrl(l.stream_url));
    es = stream;
    stream.onopen = () => { streamState = "open"; liveBadge(); };
    LIVE_EVENTS.forEach((name) => stream.addEventListener(name, refresh));
    stream.onerror = () => { streamState = "reconnecting"; liveBadge(); };
  };
  setInterval(() => { if (running.length) clockTick(true); }, 1000);
  if (l.page_stream_url) { followPages(l, l.page_stream_url); return; }
  // A page served without its data (asked for without the token) reads it first, with the tab's token.
  if (l.fetch_first) refresh(); else follow();
}

/**
 * Follow the trace's page stream: the whole document, then what changes, applied to the shown trace.
 * @param {LiveConfig} l
 * @param {string} url the page stream
 */
function followPages(l, url) {
  const badge = $("live");
  /** the tag of the document the page holds (null: none the stream knows) */
  let tag = l.version || null;
  /** @type {EventSource | null} */
  let es = null;
  /** @type {unknown[]} the parts of a whole document on their way (event page-part), each parsed as it came */
  let parts = [];
  const updated = () => {
    badge.dataset.updates = String(Number(badge.dataset.updates || "0") + 1);
    if (streamState === "failed") streamState = "open";
    liveBadge();
    if (l.list_url) C.refreshInboxCount(); // the run changed: maybe a call began or stopped waiting
  };
  /**
   * What the stream sent does not fit what the page holds: say so, and follow a new stream from ``from``.
   * @param {EventSource} stream
   * @param {unknown} err
   * @param {string | null} from
   */
  const restart = (stream, err, from) => {
    streamState = "failed";
    streamProblem = err instanceof Error ? err.message : String(err);
    liveBadge();
    stream.close();
    tag = from;
    open();
  };
  const open = () => {
    const stream = new EventSource(C.streamUrl(tag ? url + (url.indexOf("?") >= 0 ? "&" : "?") + "version=" + tag : url));
    es = stream;
    parts = [];
    // Each connection sends a document's parts from its first: those of a connection that dropped are dropped.
    stream.onopen = () => { parts = []; streamState = "open"; liveBadge(); };
    stream.addEventListener("page-part", (e) => {
      parts.push(JSON.parse(e.data));
      badge.dataset.parts = String(Number(badge.dataset.parts || "0") + 1);
    });
    stream.addEventListener("page", (e) => {
      const got = parts;
      parts = [];
      /** @type {PageDoc | PageDoc[]} */
      let whole;
      try {
        whole = wholePage(/** @type {PageDoc} */ (JSON.parse(e.data)), got);
      } catch (err) {
        restart(stream, err, tag); // parts lost or doubled: the page still holds its document
        return;
      }
      setData(whole, true);
      tag = e.lastEventId;
      badge.dataset.pages = String(Number(badge.dataset.pages || "0") + 1);
      updated();
    });
    stream.addEventListener("delta", (e) => {
      performance.mark("toolspan-delta-start");
      /** @type {PageDoc} */
      let next;
      try {
        next = applyDelta(P, /** @type {PageDelta} */ (JSON.parse(e.data)));
      } catch (err) {
        restart(stream, err, null); // not a delta of what the page holds: the whole document again
        return;
      }
      pages[cur] = next;
      detailKept = true; // a step the delta did not touch is the same object: its details stay as drawn
      try { setData(pages.length === 1 ? next : pages, true); } finally { detailKept = false; }
      tag = e.lastEventId;
      badge.dataset.deltas = String(Number(badge.dataset.deltas || "0") + 1);
      updated();
      performance.measure("toolspan-delta", "toolspan-delta-start"); // applied and drawn: what a delta costs
      performance.clearMarks("toolspan-delta-start");
    });
    stream.onerror = () => { if (es === stream) { streamState = "reconnecting"; liveBadge(); } };
  };
  if (!l.fetch_first) { open(); return; }
  // Served without its data (asked for without the token): read it once, with the tab's token.
  const load = () => {
    C.api(l.data_url)
      .then(([status, data, etag]) => {
        if (status !== 200) throw new Error("HTTP " + status + ((data && data.error) ? ": " + data.error : ""));
        ungate();
        setData(/** @type {PageDoc | PageDoc[]} */ (data), true);
        tag = etag;
        updated();
        open();
      })
      .catch((e) => { if (e instanceof C.Unauthorized) gate(load, e); else { streamState = "failed"; streamProblem = e.message; liveBadge(); } });
  };
  load();
}

/**
 * The token page in place of the trace page, until a token the server takes is given.
 * @param {() => void} then
 * @param {Error} why
 */
function gate(then, why) {
  doc.body.classList.add("gated");
  doc.body.dataset.ready = "1";
  C.askToken($("gate"), why, () => {
    ungate();
    if (config.live && config.live.list_url) C.topBar("traces");
    if (config.control) { C.forgetWho(); learnWho(); }
    then();
  });
}

function ungate() {
  if (!doc.body.classList.contains("gated")) return;
  doc.body.classList.remove("gated");
  $("gate").textContent = "";
}
