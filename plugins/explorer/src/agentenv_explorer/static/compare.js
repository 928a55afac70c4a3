// The explorer's page of two runs compared (#/compare?a=RUN_A&b=RUN_B); uses app.js's helpers.
"use strict";

const points = (x) => `${x >= 0 ? "+" : ""}${(100 * x).toFixed(1)}`;
const delta = (row) => (row.delta === null || row.delta === undefined ? "–"
  : `${points(row.delta)} pts` + (row.delta_ci95 ? ` [${points(row.delta_ci95[0])}, ${points(row.delta_ci95[1])}]` : ""));
const side = (rate) => (rate ? [`${rate.passed}/${rate.trials} `, pct(rate.pass_rate), " ", h("span", { class: "muted" }, ci(rate.pass_rate_ci95))]
  : h("span", { class: "muted" }, "not in run"));
const deltaCell = (row) => h("td", { class: row.delta > 0 ? "passed" : row.delta < 0 ? "failed" : "" }, delta(row));

// Each run's cost totals side by side (records.js's figures; "not added up" for a big run).
function compareCosts(cost) {
  const cells = (c) => !c.summed ? [h("td", { colspan: 4, class: "muted" }, `not added up: ${count(c.records)} trial records`)]
    : [h("td", {}, usd(c.usd)), h("td", {}, `${count(c.total_tokens)} (${count(c.prompt_tokens)} in, ${count(c.completion_tokens)} out)`),
      h("td", {}, Object.entries(c.sandbox_seconds || {}).map(([p, s]) => `${p} ${secs(s)}`).join(", ") || "none"), h("td", {}, secs(c.wall_seconds))];
  return table(["", "US dollars", "tokens", "sandbox-seconds", "wall time, summed"],
    [["A", cost.a], ["B", cost.b]].map(([label, c]) => h("tr", { "data-testid": "compare-cost" }, h("td", {}, label), ...cells(c))),
    { "data-testid": "compare-costs" });
}

async function comparePage(params) {
  const a = params.get("a") || "", b = params.get("b") || "";
  const data = await api("/compare?" + new URLSearchParams({ a, b }));
  const runLine = (label, r) => h("tr", { "data-testid": "compare-run" }, h("td", {}, label),
    h("td", {}, h("a", { href: "#/run/" + enc(r.id) }, r.id)), h("td", {}, when(r.created_at)), h("td", {}, r.bundle || "–"),
    h("td", {}, ranBy(r)), h("td", {}, r.agent || "–"), h("td", {}, r.model || "–"),
    h("td", {}, `${r.passed}/${r.trials} `, pct(r.pass_rate)));
  const sideBySide = (key, rows, testid) => table([key, "A passed (95% CI)", "B passed (95% CI)", "change (95% CI)"],
    rows.map((r) => h("tr", { "data-testid": testid }, h("td", {}, key === "verifier" ? h("code", {}, r.verifier) : r.name),
      h("td", {}, side(r.a)), h("td", {}, side(r.b)), deltaCell(r))));
  const flips = (kind, rows) => rows.map((f) => h("tr", { "data-testid": "flipped" }, h("td", { class: kind === "fixed" ? "passed" : "failed" }, kind),
    h("td", {}, f.task), h("td", {}, f.trial),
    h("td", {}, h("a", { href: "#/trial/" + enc(f.a.id) }, f.a.status)), h("td", {}, h("a", { href: "#/trial/" + enc(f.b.id) }, f.b.status)),
    h("td", {}, f.b.outcome || "")));
  const fl = data.flipped;
  show(
    h("h1", {}, "Compare runs"),
    table(["", "run", "started", "bundle", "started by · runner", "agent", "model", "passed"],
      [runLine("A", data.a), runLine("B", data.b)], { "data-testid": "compare-runs" }),
    h("p", { "data-testid": "compare-change" }, h("b", {}, "pass rate change, A → B: "), delta(data.change),
      h("span", { class: "muted" }, " (95% CI, Newcombe; per run: Wilson)")),
    data.cost ? [h("h2", {}, "Cost"), compareCosts(data.cost)] : null,
    h("h2", {}, "Tasks"), sideBySide("task", data.tasks, "compare-task"),
    h("h2", {}, "Verifiers"), sideBySide("verifier", data.verifiers, "compare-verifier"),
    h("h2", {}, `Trials that flipped: ${fl.fixed.length} fixed, ${fl.broken.length} broken`),
    table(["", "task", "#", "in A", "in B", "B's outcome"], [...flips("broken", fl.broken), ...flips("fixed", fl.fixed)], { "data-testid": "flips" }));
}
