// The overview, live: every 2 s while the tab is visible, the list's part is asked for with
// the ETag last seen (If-None-Match); a 304 means nothing moved. On a 200, the rows already
// shown keep their checkboxes and focus: only their cells marked data-live (state, last check,
// uptime, sparkline) and the counts are replaced; when the rows themselves differ (a monitor
// added, removed, or moved by the sort) the list is replaced, the checked boxes and the
// focused element restored by id. Bulk actions: after the browser's confirm (dashboard.js,
// data-confirm), the form goes straight to the action (confirm=yes) instead of the
// confirmation page, and returns to the page as it is now.
(function () {
  "use strict";
  var PERIOD = 2000;
  var busy = false;

  function rowIds(list) {
    return Array.prototype.map.call(list.querySelectorAll("tbody tr[id]"), function (r) { return r.id; }).join(",");
  }

  function apply(list, html, etag) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var fresh = doc.getElementById("monitor-list");
    if (!fresh) { return; }
    if (rowIds(fresh) === rowIds(list) && list.querySelector("table") && fresh.querySelector("table")) {
      Array.prototype.forEach.call(fresh.querySelectorAll("tbody tr[id]"), function (row) {
        var mine = document.getElementById(row.id);
        mine.className = row.className;
        Array.prototype.forEach.call(row.querySelectorAll("[data-live]"), function (cell) {
          var old = mine.querySelector('[data-live="' + cell.getAttribute("data-live") + '"]');
          if (old && old.innerHTML !== cell.innerHTML) { old.innerHTML = cell.innerHTML; }
        });
      });
      var counts = list.querySelector(".counts"), newCounts = fresh.querySelector(".counts");
      if (counts && newCounts && counts.innerHTML !== newCounts.innerHTML) { counts.innerHTML = newCounts.innerHTML; }
    } else {
      var checked = Array.prototype.map.call(list.querySelectorAll("input[type=checkbox]:checked"), function (c) { return c.id; });
      var focused = document.activeElement && list.contains(document.activeElement) ? document.activeElement.id : "";
      list.innerHTML = fresh.innerHTML;
      checked.forEach(function (id) { var box = document.getElementById(id); if (box) { box.checked = true; } });
      if (focused && document.getElementById(focused)) { document.getElementById(focused).focus(); }
    }
    list.setAttribute("data-etag", etag || "");
  }

  function poll() {
    var list = document.getElementById("monitor-list");
    if (!list || busy || document.visibilityState !== "visible") { return; }
    busy = true;
    var headers = { "HX-Request": "true" };
    var etag = list.getAttribute("data-etag");
    if (etag) { headers["If-None-Match"] = etag; }
    fetch(window.location.pathname + window.location.search, { headers: headers, credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        var redirect = response.headers.get("HX-Redirect");
        if (redirect) { window.location.assign(redirect); return null; }
        if (response.status !== 200) { return null; }
        return response.text().then(function (html) { apply(list, html, response.headers.get("ETag")); });
      })
      .catch(function () { /* offline for a moment: the next tick tries again */ })
      .then(function () { busy = false; });
  }

  window.setInterval(poll, PERIOD);
  document.addEventListener("visibilitychange", function () { if (document.visibilityState === "visible") { poll(); } });

  document.addEventListener("submit", function (event) {
    var form = event.target;
    // getAttribute: the form's "id" property is its checkboxes named "id".
    if (!form.getAttribute || form.getAttribute("id") !== "bulk" || event.defaultPrevented) { return; }
    var next = form.querySelector('input[name="next"]');
    if (next) { next.value = window.location.pathname + window.location.search; }
    if (form.hasAttribute("data-confirm") && !form.querySelector('input[name="confirm"]')) {
      var yes = document.createElement("input");
      yes.type = "hidden"; yes.name = "confirm"; yes.value = "yes";
      form.appendChild(yes);
    }
  });
})();
