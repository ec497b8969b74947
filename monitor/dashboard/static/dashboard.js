// The dashboard's own script: progressive enhancement only; every page works without it.
// - htmx requests carry the session's CSRF token (from <meta name="csrf-token">);
// - forms marked data-confirm ask before they post (bulk delete, deleting a monitor);
// - buttons marked data-copy copy the text of the element they name.
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
})();
