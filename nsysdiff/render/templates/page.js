{# Sorting and filtering: a click on a header sorts by that column (numbers by their
   data-v value), typing in a table's filter box hides the rows that don't contain it.
   page.html allows this script by the hash of exactly what it renders to: the blank line
   below (the script starts on a line of its own) included. #}

"use strict";
document.querySelectorAll("table.sortable").forEach(function (table) {
  var body = table.tBodies[0];
  table.querySelectorAll("th").forEach(function (th, col) {
    th.tabIndex = 0;
    function sort() {
      var down = th.getAttribute("aria-sort") !== "descending";
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", down ? "descending" : "ascending");
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[col], y = b.cells[col];
        var nx = parseFloat(x.dataset.v), ny = parseFloat(y.dataset.v);
        if (x.dataset.v !== undefined) {
          // A number column: a row without a value (one side only) goes last either way.
          if (!isFinite(nx) || !isFinite(ny)) { return isFinite(nx) ? -1 : isFinite(ny) ? 1 : 0; }
          return down ? ny - nx : nx - ny;
        }
        var r = x.textContent.localeCompare(y.textContent);
        return down ? -r : r;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sort(); } });
  });
});
document.querySelectorAll("input.filter").forEach(function (input) {
  var table = document.getElementById(input.dataset.table);
  input.addEventListener("input", function () {
    var q = input.value.toLowerCase();
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      row.hidden = q !== "" && row.textContent.toLowerCase().indexOf(q) < 0;
    });
  });
});
