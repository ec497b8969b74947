// A monitor's response-time chart: reads the page's chart.json (data-src) and draws it with
// uPlot (vendor/uPlot.iife.min.js). Enhancement only: without uPlot or fetch it does nothing,
// and the page's line and table show the same figures. The breakdown (DNS, connect, TLS,
// waiting for the first byte, the rest) is stacked: each band is drawn as the running sum of
// the parts below it, largest first, so each fill shows one part.
(function () {
  "use strict";
  var box = document.getElementById("chart");
  if (!box || !window.uPlot || !window.fetch) { return; }
  var PHASES = [["dns_ms", "DNS"], ["connect_ms", "Connect"], ["tls_ms", "TLS"],
                ["wait_ms", "First byte"], ["transfer_ms", "Rest"]];

  function color(name, fallback) {
    var value = getComputedStyle(document.documentElement).getPropertyValue(name);
    return (value && value.trim()) || fallback;
  }
  function ms(u, value) {
    if (value == null) { return "-"; }
    return value >= 1000 ? (value / 1000).toFixed(2) + " s" : Math.round(value) + " ms";
  }
  // The legend shows a part's own time, not the running sum it is drawn at.
  function own(part) {
    return function (u, value, series, index) { return ms(u, index == null ? null : part[index]); };
  }
  var PALETTE = ["#8250df", "#1f6feb", "#1a7f37", "#bf8700", "#cf222e"];

  function build(data) {
    var series = [{}];
    var columns = [data.time];
    if (data.breakdown && data.phases) {
      // Running sums, bottom (DNS) to top; drawn top first so the lower fills paint over.
      var sums = [];
      var running = data.time.map(function () { return 0; });
      PHASES.forEach(function (phase) {
        var part = data.phases[phase[0]];
        running = running.map(function (sum, i) { return part[i] == null ? sum : sum + part[i]; });
        sums.push(running.map(function (sum, i) { return data.avg_ms[i] == null ? null : sum; }));
      });
      for (var i = PHASES.length - 1; i >= 0; i--) {
        columns.push(sums[i]);
        series.push({ label: PHASES[i][1], stroke: PALETTE[i], fill: PALETTE[i] + "99",
                      width: 1, value: own(data.phases[PHASES[i][0]]), points: { show: false } });
      }
    } else {
      columns.push(data.avg_ms);
      series.push({ label: "Average", stroke: color("--primary", "#1f6feb"), width: 2, value: ms });
    }
    columns.push(data.p95_ms);
    series.push({ label: "p95", stroke: color("--muted", "#59636e"), dash: [4, 4], width: 1, value: ms });
    return { columns: columns, series: series };
  }

  function draw(data) {
    if (!data || !data.time || !data.time.length) { return; }
    var made = build(data);
    var text = color("--text", "#1f2328");
    var grid = color("--line", "#d1d9e0");
    var axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid } };
    var options = {
      width: Math.max(240, box.clientWidth),
      height: 260,
      series: made.series,
      axes: [axis, { stroke: text, grid: axis.grid, ticks: axis.ticks, values: function (u, vals) {
        return vals.map(function (v) { return ms(u, v); });
      }, size: 64 }],
      // The buckets' own span; one bucket alone (or none with a figure), the hour around it:
      // uPlot's own range of a lone point spans years.
      scales: { x: { time: true, range: function () {
        var first = data.time[0], last = data.time[data.time.length - 1];
        return first === last ? [first - 1800, last + 1800] : [first, last];
      } }, y: { range: function (u, min, max) { return [0, max || 1]; } } },
      cursor: { drag: { x: true, y: false } }
    };
    var chart = new window.uPlot(options, made.columns, box);
    box.classList.add("drawn");
    window.addEventListener("resize", function () {
      chart.setSize({ width: Math.max(240, box.clientWidth), height: 260 });
    });
  }

  fetch(box.getAttribute("data-src"), { credentials: "same-origin", headers: { Accept: "application/json" } })
    .then(function (answer) { return answer.ok ? answer.json() : null; })
    .then(draw)
    .catch(function () { /* the page's own figures stay */ });
})();
