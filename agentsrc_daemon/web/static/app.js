// agentsrc web: the live parts only. Every page reads without this file.
// A stream (server-sent events) says that something changed; the page then fetches the
// server-rendered fragment and swaps it in: no transcript text travels in an event, and
// every string goes through the server's escaping.
"use strict";

(function () {
  function fetchText(url) {
    return fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { if (!r.ok) { throw new Error(String(r.status)); } return r.text(); });
  }

  function setState(state) {
    var pill = document.getElementById("daemon-state");
    if (!pill || !state) { return; }
    var label = { live: "live", catching_up: "catching up", indexing: "indexing", down: "daemon down", migrating: "migrating" };
    pill.textContent = label[state.state] || String(state.state);
    pill.className = "state " + (state.state === "live" ? "state-live" : state.state === "down" ? "state-down" : "state-catching");
  }

  // "now": the whole live section is one fragment.
  function liveSection(el) {
    var busy = false, again = false;
    function refresh() {
      if (busy) { again = true; return; }
      busy = true;
      fetchText(el.getAttribute("data-fragment")).then(function (html) {
        el.innerHTML = html;
      }).catch(function () {}).then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
    }
    var es = new EventSource(el.getAttribute("data-live"));
    es.addEventListener("change", refresh);
    es.addEventListener("state", function (e) {
      var s = JSON.parse(e.data);
      setState(s);
      refresh();
    });
  }

  // A session: the last turn shown and any after it are fetched again and swapped in.
  function liveTurns(el) {
    var busy = false, again = false;
    function refresh() {
      if (busy) { again = true; return; }
      busy = true;
      var turns = el.querySelectorAll("article.turn");
      var last = turns.length ? turns[turns.length - 1] : null;
      var from = last ? Number(last.getAttribute("data-first")) - 1 : 0;
      var url = el.getAttribute("data-tail") + "?from=" + from;
      fetchText(url).then(function (html) {
        var box = document.createElement("div");
        box.innerHTML = html;
        var fresh = box.querySelectorAll("article.turn");
        if (!fresh.length) { return; }
        if (last) { last.remove(); } else { el.innerHTML = ""; }
        fresh.forEach(function (t) { el.appendChild(t); });
        el.setAttribute("data-updated", String(Date.now()));
      }).catch(function () {}).then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
    }
    var es = new EventSource(el.getAttribute("data-live"));
    es.addEventListener("change", refresh);
  }

  // Keyboard: "/" to search, j/k through turns or table rows, Enter follows the row's link.
  function keys() {
    var items = [], at = -1;
    function collect() {
      items = Array.prototype.slice.call(document.querySelectorAll("article.turn, table.grid tbody tr, ol.hits li"));
    }
    document.addEventListener("keydown", function (e) {
      var t = e.target;
      if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA" || t.isContentEditable)) { return; }
      if (e.ctrlKey || e.metaKey || e.altKey) { return; }
      if (e.key === "/") {
        var q = document.getElementById("q") || document.getElementById("quick-q");
        if (q) { e.preventDefault(); q.focus(); q.select(); }
      } else if (e.key === "j" || e.key === "k") {
        collect();
        if (!items.length) { return; }
        if (at >= 0 && items[at]) { items[at].classList.remove("kbd-current"); }
        at = Math.max(0, Math.min(items.length - 1, at + (e.key === "j" ? 1 : -1)));
        items[at].classList.add("kbd-current");
        items[at].scrollIntoView({ block: "nearest" });
      } else if (e.key === "Enter" && at >= 0 && items[at]) {
        var a = items[at].querySelector("a[href]");
        if (a) { a.click(); }
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (typeof EventSource !== "undefined") {
      var section = document.getElementById("live");
      if (section && section.getAttribute("data-live")) { liveSection(section); }
      var turns = document.getElementById("turns");
      if (turns && turns.getAttribute("data-live")) { liveTurns(turns); }
    }
    keys();
  });
})();
