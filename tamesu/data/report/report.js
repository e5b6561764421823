"use strict";
(function () {
  function filters() {
    var failed = document.getElementById("f-failed").checked;
    var tag = document.getElementById("f-tag").value;
    var target = document.getElementById("f-target").value;
    var query = document.getElementById("f-search").value.trim().toLowerCase();
    var shown = 0, total = 0;
    document.querySelectorAll("[data-test]").forEach(function (el) {
      var tags = JSON.parse(el.getAttribute("data-tags") || "[]");
      var ok = (!failed || el.getAttribute("data-verdict") !== "passed") &&
        (!tag || tags.indexOf(tag) >= 0) &&
        (!target || el.getAttribute("data-target") === target) &&
        (!query || el.getAttribute("data-name").toLowerCase().indexOf(query) >= 0);
      el.hidden = !ok;
      if (el.tagName === "ARTICLE") { total += 1; if (ok) shown += 1; }
    });
    document.getElementById("f-count").textContent = shown + " of " + total + " tests shown";
  }

  function player(block) {
    var audio = block.querySelector("audio");
    var duration = parseFloat(block.getAttribute("data-duration")) || 0;
    var heads = block.querySelectorAll(".playhead");
    if (!audio || !duration) { return; }
    function move() {
      var x = Math.min(1, audio.currentTime / duration) * 1000;
      heads.forEach(function (line) { line.setAttribute("x1", x); line.setAttribute("x2", x); });
    }
    audio.addEventListener("timeupdate", move);
    audio.addEventListener("seeked", move);
    block.querySelectorAll("svg").forEach(function (svg) {
      svg.addEventListener("click", function (event) {
        var box = svg.getBoundingClientRect();
        audio.currentTime = Math.max(0, (event.clientX - box.left) / box.width) * duration;
        move();
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    ["f-failed", "f-tag", "f-target", "f-search"].forEach(function (id) {
      var el = document.getElementById(id);
      el.addEventListener(el.type === "search" ? "input" : "change", filters);
    });
    document.querySelectorAll(".voice").forEach(player);
    filters();
  });
})();
