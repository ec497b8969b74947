// The monitor forms' enhancements; the forms work without them.
// - a row's or a variant's "Kind" shows only the fields of that kind;
// (posting with what was typed kept when the connection is lost is dashboard.js's data-keep-form)
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
  // A form shown again by dashboard.js's data-keep-form post: its kinds' fields once more.
  document.addEventListener("dashboard:form-replaced", function (event) { setup(event.target); });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { setup(document); });
  } else {
    setup(document);
  }
})();
