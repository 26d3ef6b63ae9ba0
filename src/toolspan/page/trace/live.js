// live.js: a served page follows its trace: it listens to the trace's event stream (the config's
// stream_url) and, on each burst of events, reads the trace's data again (data_url: one fetch at a time),
// keeping the selection and the scroll positions. "live" says the run is still running (a step has not
// ended) and the page follows it; a run that ended says nothing (the page still follows its trace: a late
// span shows). A failed update always says so. The stream's state is also in the badge's data-stream (open,
// reconnecting, failed), and the number of updates applied in its data-updates.

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
  // A page served without its data (asked for without the token) reads it first, with the tab's token.
  if (l.fetch_first) refresh(); else follow();
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
