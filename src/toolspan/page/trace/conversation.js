// conversation.js: the conversation panel: the turns of the run's conversation timeline (300 at a time),
// each act and observe a link to its step.

/** Who says each kind of turn. @type {Record<string, string>} */
const WHO = { user_message: "user", thought: "thought", tool_call: "act", tool_result: "observe", assistant_message: "assistant" };

/**
 * How long after the run's start a turn came: "+12ms", "+1.50s".
 * @param {number} tMs
 * @returns {string}
 */
function turnTime(tMs) {
  return "+" + (tMs < 1000 ? tMs + "ms" : fmtUs(tMs * 1000));
}

function conversation() {
  const box = $("conversation");
  const panel = $("conversation-panel");
  box.textContent = "";
  const items = P.conversation || [];
  panel.hidden = !items.length;
  $("conversation-id").textContent = P.conversation_id || "";
  let shown = 0;
  const more = el("button", null, "show more");
  more.type = "button";
  const add = () => {
    const stop = Math.min(items.length, shown + 300);
    for (; shown < stop; shown++) {
      const it = items[shown];
      const d = el("div", "turn " + it.type);
      d.appendChild(el("span", "who", WHO[it.type] + " \u00b7 " + turnTime(it.t_ms)));
      if (it.text !== undefined) d.appendChild(el("div", "body iso", it.text));
      else if (it.step !== null && it.step !== undefined && steps[it.step]) {
        const s = steps[it.step];
        const body = el("div", "body");
        body.appendChild(stepLink(clip(s.label) + (it.type === "tool_result" ? " \u2192 " + s.state : "(\u2026)"), s.id));
        d.appendChild(body);
      }
      box.appendChild(d);
    }
    if (shown < items.length) box.appendChild(more); else more.remove();
  };
  more.addEventListener("click", () => { more.remove(); add(); });
  add();
}
