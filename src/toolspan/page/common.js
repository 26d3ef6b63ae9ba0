"use strict";
// What every page toolspan serve serves shares: the token (kept in this tab only), requests to the API with
// it, the bar across the top, the theme switch. Data is only ever written through text nodes and DOM
// properties, never as HTML.
const toolspanCommon = (function () {
  const KEY = "toolspan-token";
  const doc = document;
  const config = (function () { const n = doc.getElementById("ts-config"); return n ? JSON.parse(n.textContent) : {}; })();
  /** @type {string | null} the token when this tab's storage is off */
  let memory = null;
  /** @type {{whoami?: string, waiting?: string, list?: string, inbox?: string}} where the server says what a token may do, and which calls wait; where the top bar leads */
  const URLS = config.urls || {};

  /**
   * A new element, its class and its text set (as a text node: never as HTML).
   * @template {keyof HTMLElementTagNameMap} K
   * @param {K} tag
   * @param {string | null} [cls]
   * @param {unknown} [text]
   * @returns {HTMLElementTagNameMap[K]}
   */
  function el(tag, cls, text) {
    const e = doc.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  // ---------- the token: sessionStorage of this tab, never a cookie, never left in the address bar ----------
  function stored() { try { return sessionStorage.getItem(KEY); } catch (e) { return memory; } }
  /** @param {string | null} value */
  function setToken(value) {
    memory = value || null;
    try { if (value) sessionStorage.setItem(KEY, value); else sessionStorage.removeItem(KEY); } catch (e) { /* kept in memory */ }
  }
  // A token given in the URL (?access_token=, or #access_token= which no server ever sees) moves into the
  // tab's storage and out of the address bar (and so out of the history and of any link copied from it).
  (function importFromUrl() {
    const url = new URL(location.href);
    const fromHash = new URLSearchParams(url.hash.slice(1)).get("access_token");
    const fromQuery = url.searchParams.get("access_token");
    const given = fromHash || fromQuery;
    if (!given) return;
    setToken(given);
    url.searchParams.delete("access_token");
    if (fromHash) url.hash = "";
    history.replaceState(null, "", url.pathname + url.search + url.hash);
  })();
  function token() { return stored() || memory; }

  // ---------- requests ----------
  // A 401: ``refused`` when a token was sent (and not taken), else none was.
  class Unauthorized extends Error {
    /** @param {boolean} refused */
    constructor(refused) { super(refused ? "the server did not take this token" : "the server wants a token"); this.refused = refused; }
  }
  const REFUSED = "The server did not take that token: check it and paste it again.";
  /**
   * @param {Record<string, string>} [extra]
   * @returns {Record<string, string>}
   */
  function headers(extra) {
    /** @type {Record<string, string>} */
    const h = Object.assign({}, extra || {});
    const t = token();
    if (t) h.Authorization = "Bearer " + t;
    return h;
  }
  // GET (or POST with a JSON body) to the server; resolves [status, body, etag]; a 401 forgets the token
  // and rejects with Unauthorized (the page then asks for it).
  /**
   * @param {string} url
   * @param {{method?: string, body?: unknown}} [options]
   * @returns {Promise<[number, any, string | null]>} the status, the JSON body (any: what the server says)
   *   and the answer's ETag without its quotes (the live trace page's data: the tag its page stream resumes from)
   */
  function api(url, options) {
    const o = options || {};
    /** @type {RequestInit} */
    const init = { method: o.method || "GET", cache: "no-store", credentials: "omit", headers: headers(o.body !== undefined ? { "Content-Type": "application/json" } : {}) };
    if (o.body !== undefined) init.body = JSON.stringify(o.body);
    const sent = token();
    return fetch(url, init).then((r) => {
      if (r.status === 401 && (o.method || "GET") === "GET") {
        if (token() === sent) setToken(null); // (not one given since this request left)
        throw new Unauthorized(Boolean(sent));
      }
      return r.text().then((text) => {
        /** @type {any} */
        let body = null;
        try { body = text ? JSON.parse(text) : null; } catch (e) { body = { error: text.slice(0, 300) }; }
        const etag = r.headers.get("etag");
        return [r.status, body, etag ? etag.replace(/^(W\/)?"|"$/g, "") : null];
      });
    });
  }
  // A stream URL with the token (EventSource cannot send headers); the URL never reaches the address bar.
  /**
   * @param {string} url
   * @returns {string}
   */
  function streamUrl(url) {
    const t = token();
    if (!t) return url;
    return url + (url.indexOf("?") >= 0 ? "&" : "?") + "access_token=" + encodeURIComponent(t);
  }

  // What this tab's token may do (GET the config's urls.whoami): {name, can}; a page without that URL, or a
  // server without that route, answers like one whose token reads (and may decide only where the page was
  // served with the buttons).
  /** @typedef {{name: string | null, can: string[], unknown?: boolean}} Who */
  /** @type {Promise<Who> | null} */
  let whoPromise = null;
  /** @returns {Promise<Who>} */
  function whoami() {
    if (!whoPromise) {
      const url = URLS.whoami;
      whoPromise = (url ? api(url) : Promise.resolve([404, null])).then(([status, body]) => {
        if (status === 200 && body && Array.isArray(body.can)) return body;
        return { name: null, can: ["read"], unknown: true };
      });
      whoPromise.catch(() => { whoPromise = null; });
    }
    return whoPromise;
  }
  function forgetWho() { whoPromise = null; }

  // ---------- giving a token ----------
  // A form taking a token: submitted, the token becomes this tab's (a decider's token reads too), and
  // onToken runs. ids: {field, button}.
  /**
   * @param {{field: string, button: string}} ids
   * @param {string} placeholder
   * @param {string} button
   * @param {() => void} onToken
   * @param {string} [cls]
   * @returns {HTMLFormElement}
   */
  function tokenForm(ids, placeholder, button, onToken, cls) {
    const form = el("form", cls);
    form.setAttribute("autocomplete", "off");
    const field = el("input");
    field.type = "password";
    field.id = ids.field;
    field.placeholder = placeholder;
    field.setAttribute("aria-label", placeholder);
    field.autocomplete = "off";
    const go = el("button", null, button);
    go.type = "submit";
    go.id = ids.button;
    form.append(field, go);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const value = field.value.trim();
      if (!value) return;
      setToken(value);
      forgetWho();
      onToken();
    });
    return form;
  }

  // The page that asks for the token, in place of the page's own content (``why``: the Unauthorized that
  // sent us here, if any: a token refused is said so).
  /**
   * @param {HTMLElement} host
   * @param {Error & {refused?: boolean} | null} why
   * @param {() => void} onToken
   */
  function askToken(host, why, onToken) {
    const problem = why && why.refused ? REFUSED : null;
    host.textContent = "";
    const box = el("section", "tokenbox");
    box.id = "token-page";
    box.append(el("h1", null, "This toolspan serve needs its token"));
    box.append(el("p", null, "It was started with --token (or TOOLSPAN_SERVER_TOKEN). Paste that token, or a decider's token to decide waiting calls too."));
    box.append(tokenForm({ field: "token", button: "token-go" }, "Token", "Open", onToken));
    if (problem) { const p = el("p", "problem", problem); p.id = "token-problem"; box.append(p); }
    box.append(el("p", null, "Kept in this browser tab only (its session storage): never in a cookie or a URL; closing the tab forgets it."));
    host.appendChild(box);
    /** @type {HTMLElement} */ (doc.getElementById("token")).focus();
  }

  // ---------- the bar across the top ----------
  let barShown = false;
  // Shows the bar (once), and what it says now: the waiting calls, whose token this tab holds (again
  // after a token is given).
  /** @param {string} current the page the bar is on: "traces" or "inbox" */
  function topBar(current) {
    const bar = doc.getElementById("top");
    if (!bar) return;
    if (!barShown) {
      barShown = true;
      bar.hidden = false;
      // Its links lead where the page's config says (urls.list: the runs, urls.inbox: the inbox).
      /** @type {[string, string | undefined][]} */
      const links = [["top-brand", URLS.list], ["nav-traces", URLS.list], ["nav-inbox", URLS.inbox]];
      links.forEach(([id, href]) => {
        const a = /** @type {HTMLAnchorElement | null} */ (doc.getElementById(id));
        if (a && href) a.href = href;
      });
      const link = doc.getElementById("nav-" + current);
      if (link) link.setAttribute("aria-current", "page");
      const theme = doc.getElementById("top-theme");
      if (theme) theme.addEventListener("click", switchTheme);
      setInterval(refreshInboxCount, 5000);
      doc.addEventListener("visibilitychange", refreshInboxCount); // a tab shown again: at once
    }
    refreshInboxCount();
    whoami().then(showWho, () => {});
  }
  /** @param {Who} who */
  function showWho(who) {
    const box = doc.getElementById("who");
    if (!box || who.unknown) return;
    box.hidden = false;
    box.textContent = who.can.indexOf("decide") >= 0 ? "deciding as " + (who.name || "?") : token() ? "read only" : "";
    box.title = who.can.indexOf("decide") >= 0 ? "This tab's token is the decider token " + (who.name || "") : "This tab's token may read; a decider's token may also decide waiting calls";
  }
  // The count of waiting calls in the bar: read again every few seconds, after each change a page sees, and
  // set by the inbox from each of its own reads, so it follows the inbox as it fills and empties.
  function refreshInboxCount() {
    if (!doc.getElementById("inbox-count") || doc.hidden || !URLS.waiting) return;
    api(URLS.waiting).then(([status, body]) => {
      if (status === 200 && body && Array.isArray(body.waiting)) showInboxCount(body.waiting.length);
    }, () => {});
  }
  /** @param {number} n */
  function showInboxCount(n) {
    const badge = doc.getElementById("inbox-count");
    if (!badge) return;
    badge.textContent = String(n);
    badge.hidden = n === 0;
    badge.title = n + (n === 1 ? " call waits" : " calls wait") + " for a decision";
  }
  function switchTheme() {
    const root = doc.documentElement;
    const dark = root.dataset.theme ? root.dataset.theme === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
    root.dataset.theme = dark ? "light" : "dark";
  }

  // ---------- times ----------
  /**
   * @param {number | null | undefined} ms
   * @returns {string}
   */
  function fmtMs(ms) {
    if (ms === null || ms === undefined) return "";
    if (ms < 1) return "<1 ms";
    if (ms < 1000) return Math.round(ms) + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
    if (ms < 3600000) return Math.floor(ms / 60000) + " min " + Math.round((ms % 60000) / 1000) + " s";
    return Math.floor(ms / 3600000) + " h " + Math.round((ms % 3600000) / 60000) + " min";
  }
  /**
   * @param {number} thenMs
   * @param {number} [nowMs]
   * @returns {string}
   */
  function fmtAgo(thenMs, nowMs) {
    const s = Math.max(0, Math.round(((nowMs || Date.now()) - thenMs) / 1000));
    if (s < 5) return "just now";
    if (s < 60) return s + " s ago";
    if (s < 3600) return Math.floor(s / 60) + " min ago";
    if (s < 86400) return Math.floor(s / 3600) + " h ago";
    return new Date(thenMs).toISOString().slice(0, 10);
  }
  /**
   * @param {number} ms
   * @returns {string}
   */
  function fmtWhen(ms) { return new Date(ms).toISOString().replace("T", " ").slice(0, 19) + " UTC"; }

  return Object.freeze({ config, el, token, setToken, api, streamUrl, whoami, forgetWho, tokenForm, askToken, topBar, refreshInboxCount, showInboxCount, Unauthorized, fmtMs, fmtAgo, fmtWhen, switchTheme });
})();
window.toolspanCommon = toolspanCommon;
