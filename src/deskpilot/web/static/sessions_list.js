// deskpilot dashboard: the sessions list follows the desktop live. app.js re-dispatches
// every /events "state" as a `dp:state` event carrying `sessionsRevision`, which changes
// whenever a session row or a timeline event is written; on a change the list (this same
// URL: its filter and page) is fetched again and #sessions-list replaced, so a new session,
// a state badge or a budget shows without a reload. While a session runs, its duration
// grows without any write, so the list is also fetched every few seconds then.
"use strict";
(function () {
  var list = document.getElementById("sessions-list");
  if (!list) return;
  var TICK_MS = 5000;
  var revision = list.getAttribute("data-revision");
  var busy = false;
  var again = false;

  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.pathname + location.search, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("sessions-list");
        if (fresh) {
          list.innerHTML = fresh.innerHTML;
          list.setAttribute("data-live", fresh.getAttribute("data-live") || "");
          list.setAttribute("data-revision", fresh.getAttribute("data-revision") || "");
          list.setAttribute("data-refreshed", String(Date.now()));
        }
      })
      .catch(function () { /* the page-wide stream says when the dashboard is away */ })
      .finally(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }

  window.addEventListener("dp:state", function (event) {
    var next = event.detail && event.detail.sessionsRevision;
    if (next === undefined) return;
    if (revision !== null && next !== revision) refresh();
    revision = next;
  });
  setInterval(function () {
    if (list.getAttribute("data-live") && !document.hidden) refresh();
  }, TICK_MS);
})();
