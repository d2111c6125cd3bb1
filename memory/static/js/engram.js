/* Engram dashboard: keyboard shortcuts. No framework; every action is a real button or link. */
(function () {
  "use strict";

  function typing(target) {
    if (!target || !target.closest) return false;
    return Boolean(target.closest("input, textarea, select, [contenteditable='true']"));
  }

  function items() {
    return Array.prototype.slice.call(
      document.querySelectorAll("[data-review-item]:not(.decided)")
    );
  }

  function current() {
    return document.querySelector("[data-review-item].current:not(.decided)");
  }

  function mark(item) {
    var old = document.querySelectorAll("[data-review-item].current");
    for (var i = 0; i < old.length; i++) old[i].classList.remove("current");
    if (item) item.classList.add("current");
  }

  function select(item) {
    mark(item);
    if (!item) return;
    // Moving focus away from a clicked button would make htmx forget which button submitted.
    if (!item.contains(document.activeElement)) item.focus({ preventScroll: true });
    item.scrollIntoView({ block: "nearest", behavior: "smooth" });
  }

  function move(step) {
    var list = items();
    if (!list.length) return;
    var index = list.indexOf(current());
    var next = index < 0 ? 0 : Math.min(list.length - 1, Math.max(0, index + step));
    select(list[next]);
  }

  function press(key) {
    var item = current() || items()[0];
    if (!item) return false;
    select(item);
    var target = item.querySelector('[data-key="' + key + '"]');
    if (!target) return false;
    if (target.tagName === "DETAILS") {
      target.open = true;
      var field = target.querySelector("textarea, input");
      if (field) field.focus();
      return true;
    }
    target.click();
    return true;
  }

  function openDetails(id) {
    var el = document.getElementById(id);
    if (el && el.tagName === "DETAILS") el.open = true;
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    var key = event.key;
    if (key === "?") {
      var dialog = document.getElementById("shortcuts");
      if (dialog && dialog.showModal && !dialog.open) dialog.showModal();
      event.preventDefault();
      return;
    }
    if (key === "/") {
      var search = document.querySelector("[data-search]");
      if (search) {
        search.focus();
        event.preventDefault();
      } else {
        window.location.href = "/engrams/";
      }
      return;
    }
    if (!items().length) return;
    if (key === "j" || key === "n" || key === "ArrowDown") {
      move(1);
      event.preventDefault();
    } else if (key === "k" || key === "ArrowUp") {
      move(-1);
      event.preventDefault();
    } else if (/^[a-z0-9]$/.test(key)) {
      if (press(key)) event.preventDefault();
    }
  });

  document.addEventListener("click", function (event) {
    var opener = event.target.closest && event.target.closest("[data-shortcuts-open]");
    if (opener) {
      var dialog = document.getElementById("shortcuts");
      if (dialog && dialog.showModal) dialog.showModal();
    }
    var details = event.target.closest && event.target.closest("[data-open-details]");
    if (details) openDetails(details.getAttribute("data-open-details"));
    var item = event.target.closest && event.target.closest("[data-review-item]");
    if (item && !item.classList.contains("decided")) mark(item);
  });

  // After a decision replaces an item, carry on with the next undecided one. htmx:load fires
  // on the new content once it is in the document (afterSwap would fire on the replaced node).
  document.addEventListener("htmx:load", function (event) {
    var swapped = event.target;
    if (swapped && swapped.classList && swapped.classList.contains("decided")) {
      var list = items();
      var following = list.filter(function (el) {
        return swapped.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING;
      });
      select(following[0] || list[0] || null);
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    if (window.location.hash === "#edit") openDetails("edit");
    var first = items()[0];
    if (first) first.classList.add("current");
  });
})();
