// oncecall console: refreshes the queue's counts and rows in place.
// No other script runs on these pages (Content-Security-Policy: script-src 'self').
"use strict";
(function () {
  var box = document.getElementById("queue");
  if (!box) { return; }
  var src = box.getAttribute("data-src");
  var every = parseInt(box.getAttribute("data-every"), 10) || 5000;
  var note = document.getElementById("refreshed");
  function refresh() {
    fetch(src, { credentials: "same-origin", headers: { "X-Console-Fetch": "1" }, cache: "no-store" })
      .then(function (r) {
        return r.text().then(function (body) {
          if (!r.ok) { throw new Error(body || ("HTTP " + r.status)); }
          return body;
        });
      })
      .then(function (html) {
        box.innerHTML = html; // server-rendered by html/template: escaped
        if (note) { note.textContent = "Refreshed at " + new Date().toLocaleTimeString() + "."; }
        box.setAttribute("data-refreshed", String(Date.now()));
      })
      .catch(function (e) {
        if (note) { note.textContent = "Not refreshed: " + e.message; }
      })
      .finally(function () { setTimeout(refresh, every); });
  }
  setTimeout(refresh, every);
})();
