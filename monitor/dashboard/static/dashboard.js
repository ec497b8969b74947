// The dashboard's own script: progressive enhancement only; every page works without it.
// - htmx requests carry the session's CSRF token (from <meta name="csrf-token">);
// - forms marked data-confirm ask before they post (bulk delete, deleting a monitor);
// - buttons marked data-copy copy the text of the element they name;
// - a form marked data-keep-form="REGION" posts with fetch: a lost connection, or an answer that
//   is not the form again (a 503 page), says so in the form's .form-status and keeps what was
//   typed (the page does not navigate away); an answer that is the form again (a 422 next to its
//   field, a 503 with the values kept) replaces the element with id REGION (the form's own id when
//   empty); a redirect is followed. htmx requests that fail say so the same way.
(function () {
  "use strict";
  function csrf() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }
  document.addEventListener("htmx:configRequest", function (event) {
    event.detail.headers["X-CSRF-Token"] = csrf();
  });
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form.getAttribute && form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) {
      event.preventDefault();
    }
  }, true);
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-copy]") : null;
    if (!button) { return; }
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source || !navigator.clipboard) { return; }
    navigator.clipboard.writeText(source.value || source.textContent).then(function () {
      button.textContent = "Copied";
    });
  });
  var LOST = "The connection to the server was lost; nothing was saved. What you typed is still here: try again.";
  function say(form, message) {
    var status = form ? form.querySelector(".form-status") : null;
    if (!status) { window.alert(message); return; }
    status.textContent = message;
    status.hidden = false;
    status.setAttribute("tabindex", "-1");
    status.focus();
  }
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches("form[data-keep-form]") || event.defaultPrevented || !window.fetch) { return; }
    var region = form.getAttribute("data-keep-form") || form.id;
    if (!region || !document.getElementById(region)) { return; }
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
          var fresh = new DOMParser().parseFromString(text, "text/html").getElementById(region);
          var here = document.getElementById(region);
          if (!fresh || !here) {
            say(form, "The server answered " + response.status + " and saved nothing; what you typed is still here: try again.");
            return;
          }
          here.replaceWith(document.importNode(fresh, true));
          var mine = document.getElementById(region);
          mine.dispatchEvent(new CustomEvent("dashboard:form-replaced", { bubbles: true }));
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
})();
