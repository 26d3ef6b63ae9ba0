// audit.js: audit pages (toolspan audit --to html) carry policy_findings on tool steps and an audit
// summary: the panel above the timeline, each finding a link to its call.

/**
 * One finding, as a line.
 * @param {Finding} f
 * @param {"li" | "div"} tag
 * @param {boolean} withPolicy
 * @param {HTMLElement} [link]
 * @returns {HTMLElement}
 */
function findingLine(f, tag, withPolicy, link) {
  const d = el(tag, "finding o-" + f.outcome);
  d.append(el("span", "outcome", OUTCOME[f.outcome]), " ");
  if (link) d.append(link, " ");
  d.appendChild(el("span", "iso", f.rule_id + " (" + f.rule_kind + "): " + f.reason));
  if (withPolicy) d.appendChild(el("span", "policy iso", " \u00b7 policy " + f.policy_id + " version " + f.policy_version));
  return d;
}

/** The audit panel: the policy, its counts, every finding (the first 1,000). */
function auditPanel() {
  const panel = $("audit-panel");
  const list = $("audit-list");
  list.textContent = "";
  const audited = /** @type {(PageDoc & {audit: Audit})[]} */ (pages.filter((p) => p.audit));
  panel.hidden = !audited.length;
  if (!audited.length) { filter.flagged = false; field("audit-only").checked = false; return; }
  const total = { violations: 0, enforced: 0, unchecked: 0 };
  audited.forEach((p) => { total.violations += p.audit.violations; total.enforced += p.audit.enforced; total.unchecked += p.audit.unchecked; });
  const a = audited[0].audit;
  $("audit-h").textContent = "Policy " + a.policy_id + " version " + a.policy_version + ": " + total.violations + " violation(s), " + total.enforced + " denied, " + total.unchecked + " unchecked";
  panel.classList.toggle("clean", !total.violations && !total.enforced);
  let n = 0;
  pages.forEach((p, pi) => p.steps.forEach((s, si) => (s.policy_findings || []).forEach((f) => {
    if (n++ >= 1000) return;
    const link = actionLink(clip(s.label), () => jump(pi, si));
    link.title = "Show this call" + (pages.length > 1 ? " (trace " + p.trace_id + ")" : "");
    list.appendChild(findingLine(f, "li", false, link));
  })));
  if (!n) list.appendChild(el("li", "empty", "No findings: every tool call keeps to the policy."));
  else if (n > 1000) list.appendChild(el("li", "empty", (n - 1000) + " more findings: see the steps' details."));
}
