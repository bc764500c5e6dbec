// The readiness page: while a check runs, wait for it and show its report; keep the verdict
// and the live sections (halts, desktop lease, takeover hold) current when the page-wide
// state changes.
"use strict";
(function () {
  var POLL_MS = 500;
  var running = document.getElementById("checks-running");
  if (running) {
    var url = running.getAttribute("data-status-url");
    var poll = function () {
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) { return r.json(); })
        .then(function (s) {
          if (!s.running) location.reload();
          else setTimeout(poll, POLL_MS);
        }, function () { setTimeout(poll, POLL_MS * 3); });
    };
    setTimeout(poll, POLL_MS);
  }

  var asked = 0;
  function refreshLive() {
    var mine = ++asked;
    fetch("/readiness", { credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        if (mine !== asked) return; // a later refresh is on its way: older HTML must not win
        var doc = new DOMParser().parseFromString(html, "text/html");
        ["verdict", "live-sections"].forEach(function (id) {
          var fresh = doc.getElementById(id);
          var here = document.getElementById(id);
          if (fresh && here) here.innerHTML = fresh.innerHTML;
        });
      });
  }

  // The sections are drawn from the revision the server rendered with them; every event
  // that carries another one refreshes them, the first event too (a change can land between
  // the render and the stream's first state).
  var sections = document.getElementById("live-sections");
  var shown = sections ? sections.getAttribute("data-revision") : null;
  window.addEventListener("dp:state", function (event) {
    var next = event.detail.liveRevision;
    if (next === undefined || next === shown) return;
    shown = next;
    refreshLive();
  });
})();
