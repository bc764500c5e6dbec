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

  function refreshLive() {
    fetch("/readiness", { credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        ["verdict", "live-sections"].forEach(function (id) {
          var fresh = doc.getElementById(id);
          var here = document.getElementById(id);
          if (fresh && here) here.innerHTML = fresh.innerHTML;
        });
      });
  }

  var last = null;
  window.addEventListener("dp:state", function (event) {
    var d = event.detail;
    var key = JSON.stringify([d.halt, d.takeover, d.sessionsRevision]);
    if (last !== null && key !== last) refreshLive();
    last = key;
  });
})();
