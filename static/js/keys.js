// Keyboard for the review queue: j/k move, Enter opens, x selects, ? shows the keys.
// Works on whatever queue rows are in the page now (htmx swaps them), so nothing is bound per row.
(function () {
  "use strict";
  var CURRENT = "is-current";

  function typing(target) {
    var tag = (target && target.tagName) || "";
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable);
  }
  function rows() { return Array.prototype.slice.call(document.querySelectorAll("[data-queue-row]")); }
  function current(all) { for (var i = 0; i < all.length; i++) { if (all[i].classList.contains(CURRENT)) return i; } return -1; }
  function move(delta) {
    var all = rows();
    if (!all.length) return;
    var index = current(all);
    var next = index < 0 ? (delta > 0 ? 0 : all.length - 1) : Math.max(0, Math.min(all.length - 1, index + delta));
    if (index >= 0) all[index].classList.remove(CURRENT);
    all[next].classList.add(CURRENT);
    all[next].setAttribute("aria-selected", "true");
    if (index >= 0 && index !== next) all[index].removeAttribute("aria-selected");
    var link = all[next].querySelector("a.open");
    if (link) link.focus({ preventScroll: true });
    all[next].scrollIntoView({ block: "nearest" });
  }
  function help() {
    var dialog = document.getElementById("keys-help");
    if (!dialog) return;
    if (dialog.open) dialog.close(); else dialog.showModal();
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    var all;
    switch (event.key) {
      case "j": move(1); event.preventDefault(); break;
      case "k": move(-1); event.preventDefault(); break;
      case "?": help(); event.preventDefault(); break;
      case "Enter":
        all = rows();
        var index = current(all);
        // a focused link opens itself; only act when the focus is not already on a control
        if (index >= 0 && !(event.target.closest && event.target.closest("a, button"))) {
          var link = all[index].querySelector("a.open");
          if (link) { link.click(); event.preventDefault(); }
        }
        break;
      case "x":
        all = rows();
        var i = current(all);
        var box = i >= 0 && all[i].querySelector("input[type=checkbox]");
        if (box) { box.checked = !box.checked; event.preventDefault(); }
        break;
    }
  });
  document.addEventListener("click", function (event) {
    if (event.target.closest && event.target.closest("[data-keys-help]")) help();
  });
  // Behaviour that would otherwise be inline handlers (onsubmit/onchange), which the
  // Content-Security-Policy forbids: <form data-confirm="question"> and <select data-autosubmit>.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form && form.getAttribute && form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) event.preventDefault();
  });
  document.addEventListener("change", function (event) {
    var field = event.target;
    if (field && field.hasAttribute && field.hasAttribute("data-autosubmit") && field.form) field.form.requestSubmit();
  });
})();
