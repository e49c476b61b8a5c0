// The live view's chart: utilization (0–1) and placements/s over time, as one Vega-Lite spec.
// Its own file so that a test can compile and render it outside a browser (tests/dashboard/test_live_chart.py).
// Choices: each series has its own y axis; placements/s labels are formatted with three significant digits
// (",.3~r"), because Vega's default format on a flat series (an idle cluster: every rate 0, a zero-width
// domain) derives its precision from a zero tick step and printed "0.000000".

function liveChartSpec(values) {
  const line = (series, color, title, scale, axis) => ({
    transform: [{ filter: `datum.series === '${series}'` }],
    mark: { type: "line", color },
    encoding: {
      y: { field: "value", type: "quantitative", title, scale, axis: { titleColor: color, ...axis } },
      tooltip: [{ field: "series" }, { field: "time", type: "temporal", timeUnit: "hoursminutesseconds" }, { field: "value", format: ".3~g" }],
    },
  });
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    width: "container", height: 200,
    data: { name: "points", values },
    encoding: { x: { field: "time", type: "temporal", title: null, axis: { format: "%H:%M:%S", labelOverlap: true } } },
    layer: [
      line("utilization", "#1f77b4", "utilization", { domain: [0, 1] }, {}),
      line("placements/s", "#d62728", "placements/s", { domainMin: 0 }, { format: ",.3~r" }),
    ],
    resolve: { scale: { y: "independent" } },
  };
}
