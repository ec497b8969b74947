// The monitor forms' enhancements; the forms work without them.
// - a row's or a variant's "Kind" shows only the fields of that kind;
// - a form marked data-keep-form posts with fetch: a lost connection says so and keeps what was
//   typed (the page does not navigate away); an answer that is the form again (a 422 next to its
//   field, a 503) replaces the form; a redirect is followed;
// - htmx requests that fail (htmx:sendError, htmx:responseError) say so the same way.
(function () {
  "use strict";
  var LOST = "The connection to the server was lost; nothing was saved. What you typed is still here: try again.";
  function showKinds(box) {
    var select = box.querySelector("select[name$='.type']");
    if (!select) { return; }
    var kind = select.value;
    box.querySelectorAll(".for-kinds[data-kinds]").forEach(function (el) {
      if (el.closest("[data-variant]") !== box) { return; }
      el.hidden = kind !== "" && el.getAttribute("data-kinds").split(" ").indexOf(kind) < 0;
    });
  }
  function setup(root) {
    root.querySelectorAll("[data-variant]").forEach(showKinds);
  }
  document.addEventListener("change", function (event) {
    var box = event.target.closest ? event.target.closest("[data-variant]") : null;
    if (box && event.target.matches("select[name$='.type']")) { showKinds(box); }
  });
  function say(form, message) {
    var status = form ? form.querySelector(".form-status") : null;
    if (!status) { window.alert(message); return; }
    status.textContent = message;
    status.hidden = false;
    status.focus && status.setAttribute("tabindex", "-1");
    status.focus && status.focus();
  }
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches("form[data-keep-form]") || event.defaultPrevented || !window.fetch) { return; }
    event.preventDefault();
    var submitter = event.submitter;
    var data = new FormData(form);
    if (submitter && submitter.name) { data.append(submitter.name, submitter.value); }
    var action = (submitter && submitter.getAttribute("formaction")) || form.getAttribute("action");
    var buttons = form.querySelectorAll("button");
    buttons.forEach(function (b) { b.disabled = true; });
    fetch(action, { method: "POST", body: new URLSearchParams(data), credentials: "same-origin", redirect: "follow" })
      .then(function (response) {
        if (response.redirected) { window.location.assign(response.url); return null; }
        return response.text().then(function (text) {
          var page = new DOMParser().parseFromString(text, "text/html");
          var fresh = page.getElementById("monitor-form");
          var here = document.getElementById("monitor-form");
          if (!fresh || !here) { say(form, "The server answered " + response.status + "; what you typed is still here."); return; }
          here.replaceWith(document.importNode(fresh, true));
          var mine = document.getElementById("monitor-form");
          setup(mine);
          var problem = mine.querySelector("[aria-invalid='true'], .error-text:not([hidden]), .trial");
          if (problem) { problem.setAttribute("tabindex", "-1"); problem.focus(); }
        });
      })
      .catch(function () { say(form, LOST); })
      .finally(function () { buttons.forEach(function (b) { b.disabled = false; }); });
  });
  function htmxFailed(event) {
    var elt = event.detail && event.detail.elt;
    var form = elt && elt.closest ? elt.closest("form") : null;
    say(form, event.type === "htmx:sendError" ? LOST : "The server could not do that just now; nothing was lost: try again.");
  }
  document.addEventListener("htmx:sendError", htmxFailed);
  document.addEventListener("htmx:responseError", htmxFailed);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { setup(document); });
  } else {
    setup(document);
  }
})();
