// The explorer's pages: plain DOM, no framework, every text set through textContent.
"use strict";

const main = () => document.getElementById("main");
let timer = null;
let stream = null; // {runId, source}: the live run page's server-sent events
let runCache = null; // the run page's figures of the run being viewed (a finished one)

function closeStream() { if (stream) { stream.source.close(); stream = null; } }

// While a run is going its page listens to /runs/ID/events and renders again only when the
// counts change (and once when the run ends), instead of asking every second.
function followRun(runId, counts) {
  const shown = JSON.stringify(counts);
  if (stream && stream.runId === runId) { stream.shown = shown; return; }
  closeStream();
  const source = new EventSource(`/api/v1/runs/${enc(runId)}/events`);
  stream = { runId, source, shown };
  source.addEventListener("counts", (e) => {
    if (JSON.stringify(JSON.parse(e.data).counts) !== stream.shown) route();
  });
  source.addEventListener("end", () => { closeStream(); route(); });
}

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

async function api(path, options) {
  const res = await fetch("/api/v1" + path, {
    headers: { "Content-Type": "application/json" }, credentials: "same-origin", ...options,
  });
  const text = await res.text();
  let data = null;
  try { data = JSON.parse(text); } catch (e) { data = text; }
  if (!res.ok) throw new Error((data && data.detail) || `${res.status} ${res.statusText}`);
  return data;
}

const enc = (s) => encodeURIComponent(s);
const pct = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%");
const num = (x, d = 3) => (x === null || x === undefined ? "–" : Number(x).toFixed(d));
const ci = (p) => (p ? `[${num(p[0])}, ${num(p[1])}]` : "");
const secs = (s) => (typeof s === "number" ? s.toFixed(2) + "s" : "–");
const when = (t) => (t ? String(t).replace("T", " ").slice(0, 19) : "–");

function show(...nodes) {
  main().replaceChildren(...nodes.flat(3).filter((n) => n !== null && n !== undefined && n !== false));
}
function fail(err) { show(h("p", { class: "error", "data-testid": "error" }, String(err.message || err))); }

function table(headers, rows, attrs) {
  return h("table", attrs || {},
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))),
    h("tbody", {}, rows.length ? rows : [h("tr", {}, h("td", { colspan: headers.length, class: "muted" }, "nothing yet"))]));
}

function pager(page, go) {
  const from = page.total ? page.offset + 1 : 0;
  const to = page.offset + page.items.length;
  return h("div", { class: "pager", "data-testid": "pager", "data-offset": String(page.offset) },
    h("button", { disabled: page.offset === 0, onclick: () => go(Math.max(page.offset - page.limit, 0)) }, "‹ previous"),
    h("span", { class: "muted" }, `${from}–${to} of ${page.total}`),
    h("button", { disabled: !page.has_more, onclick: () => go(page.offset + page.limit) }, "next ›"));
}

function rateBar(rate) {
  const width = rate === null || rate === undefined ? 0 : Math.round(rate * 100);
  const bar = h("span", { class: "bar" });
  bar.style.width = `${width}%`; // CSSOM, which the page's CSP allows (style attributes it does not)
  return h("span", {}, h("span", { class: "barbox" }, bar), pct(rate));
}

// ---- runs ------------------------------------------------------------------------------
async function runsPage(params) {
  const offset = Number(params.get("offset") || 0);
  const bundle = params.get("bundle") || "";
  const q = new URLSearchParams({ limit: 50, offset });
  if (bundle) q.set("bundle", bundle);
  const page = await api("/runs?" + q);
  const go = (o, b = bundle) => { location.hash = "#/runs?" + new URLSearchParams({ offset: o, bundle: b }); };
  const filter = h("input", { placeholder: "bundle name", value: bundle, "data-testid": "bundle-filter" });
  const picked = [];
  const compareBtn = h("button", { disabled: true, "data-testid": "compare-selected", onclick: () => {
    const [a, b] = [...picked].sort((x, y) => String(x.created_at).localeCompare(String(y.created_at))); // the older is A
    location.hash = "#/compare?" + new URLSearchParams({ a: a.id, b: b.id });
  } }, "compare 2 selected runs");
  const pick = (r) => (ev) => {
    if (ev.target.checked) picked.push(r); else picked.splice(picked.indexOf(r), 1);
    compareBtn.disabled = picked.length !== 2;
  };
  const rows = page.items.map((r) => h("tr", { "data-testid": "run-row" },
    h("td", {}, h("input", { type: "checkbox", title: "compare", "aria-label": "compare " + r.id, "data-testid": "compare-pick", onchange: pick(r) })),
    h("td", {}, h("a", { href: "#/run/" + enc(r.id) }, r.id)),
    h("td", {}, when(r.created_at)),
    h("td", {}, r.bundle || "–"),
    h("td", { "data-testid": "run-by" }, ranBy(r)),
    h("td", {}, (r.tasks || []).join(", ")),
    h("td", {}, `${r.counts.trials}` + (r.trials_per_task > 1 ? ` (${r.trials_per_task}/task)` : "")),
    h("td", {}, rateBar(r.counts.pass_rate)),
    h("td", {}, h("span", { class: "passed" }, r.counts.passed), " / ", h("span", { class: "failed" }, r.counts.failed),
      " / ", h("span", { class: "unscored" }, r.counts.unscored),
      r.counts.running + r.counts.unfinished ? h("span", { class: "running" }, ` · ${r.counts.running + r.counts.unfinished} to go`) : null)));
  show(
    h("h1", {}, "Runs"),
    startForm(),
    h("div", { class: "filters" }, filter,
      h("button", { onclick: () => go(0, filter.value.trim()) }, "filter"),
      bundle ? h("button", { onclick: () => go(0, "") }, "clear") : null, compareBtn),
    table(["", "run", "started", "bundle", "started by · runner", "tasks", "trials", "pass rate", "passed / failed / unscored"], rows, { "data-testid": "runs" }),
    pager(page, (o) => go(o)));
}

function startForm() {
  const field = (name, placeholder, size) => h("input", { name, placeholder, size: size || 14, "data-testid": "start-" + name });
  const spec = field("spec", "bundle: folder, name or hf://", 34);
  const task = field("task", "task (optional)");
  const agent = field("agent", "agent (optional)");
  const model = field("model", "model (optional)");
  const trials = h("input", { name: "trials", type: "number", min: 1, value: 1, class: "narrow", "data-testid": "start-trials" });
  const message = h("span", { class: "error", "data-testid": "start-error" });
  const submit = async (ev) => {
    ev.preventDefault();
    message.textContent = "starting…";
    const body = { spec: spec.value.trim(), trials: Number(trials.value || 1) };
    if (task.value.trim()) body.task = [task.value.trim()];
    if (agent.value.trim()) body.agent = agent.value.trim();
    if (model.value.trim()) body.model = model.value.trim();
    try {
      const started = await api("/runs", { method: "POST", body: JSON.stringify(body) });
      location.hash = "#/run/" + enc(started.run_id);
    } catch (err) { message.textContent = err.message; }
  };
  return h("form", { class: "start", onsubmit: submit, "data-testid": "start-form" },
    h("b", {}, "Start a run:"), spec, task, agent, model, h("label", {}, "trials ", trials),
    h("button", { type: "submit", "data-testid": "start-submit" }, "start"), message);
}

// ---- one run ---------------------------------------------------------------------------
function svgEl(svg, tag, attrs, text) {
  const el = document.createElementNS(svg.namespaceURI, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  svg.append(el);
  return el;
}

// Trials per score bin: each bar labelled with its count, a y axis of trials, an x axis of scores.
function histogram(bins) {
  const width = 460, height = 170, left = 44, right = 10, top = 16, bottom = 34;
  const plotW = width - left - right, plotH = height - top - bottom, bw = plotW / bins.length;
  const most = Math.max(1, ...bins.map((b) => b.trials));
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "hist"); svg.setAttribute("width", width); svg.setAttribute("height", height);
  svg.setAttribute("data-testid", "score-histogram");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "trials per score: " + bins.map((b) => `${b.from.toFixed(1)}–${b.to.toFixed(1)}: ${b.trials}`).join(", "));
  const base = top + plotH;
  svgEl(svg, "line", { x1: left, y1: base, x2: left + plotW, y2: base, class: "axis" });
  svgEl(svg, "line", { x1: left, y1: top, x2: left, y2: base, class: "axis" });
  for (const tick of [0, most]) {
    const y = base - (plotH * tick) / most;
    svgEl(svg, "text", { x: left - 4, y: y + 3, "text-anchor": "end", class: "tick", "data-testid": "y-tick" }, tick);
  }
  svgEl(svg, "text", { x: 10, y: top + plotH / 2, "text-anchor": "middle", class: "label",
    transform: `rotate(-90 10 ${top + plotH / 2})` }, "trials");
  svgEl(svg, "text", { x: left + plotW / 2, y: height - 2, "text-anchor": "middle", class: "label" }, "score");
  bins.forEach((b, i) => {
    const x = left + i * bw, bh = (plotH * b.trials) / most;
    const r = svgEl(svg, "rect", { x: x + 1, y: base - bh, width: bw - 2, height: bh, "data-testid": "bin" });
    const title = document.createElementNS(svg.namespaceURI, "title");
    title.textContent = `score ${b.from.toFixed(1)}–${b.to.toFixed(1)}: ${b.trials} trial(s)`;
    r.append(title);
    if (b.trials) svgEl(svg, "text", { x: x + bw / 2, y: base - bh - 3, "text-anchor": "middle", class: "count", "data-testid": "bin-count" }, b.trials);
    svgEl(svg, "text", { x, y: base + 12, "text-anchor": "middle", class: "tick" }, b.from.toFixed(1));
  });
  svgEl(svg, "text", { x: left + plotW, y: base + 12, "text-anchor": "middle", class: "tick" }, "1.0");
  return svg;
}

// Each verifier's pass rate over the trials it scored, the one failing most first.
function verifierRates(rows) {
  return table(["verifier", "trials scored", "passed", "pass rate (95% CI)", "mean score"],
    rows.map((v) => h("tr", { "data-testid": "verifier-rate" },
      h("td", {}, h("code", {}, v.verifier)), h("td", {}, v.trials), h("td", {}, v.passed),
      h("td", {}, rateBar(v.pass_rate), " ", h("span", { class: "muted" }, ci(v.pass_rate_ci95))),
      h("td", {}, num(v.mean_score)))),
    { "data-testid": "verifier-rates" });
}

const ranBy = (r) => [r.front_end, r.runner ? `${r.runner} runner` : null].filter(Boolean).join(" · ") || "–";

async function runPage(runId, params) {
  const offset = Number(params.get("offset") || 0);
  const status = params.get("status") || "";
  const q = new URLSearchParams({ limit: 50, offset });
  if (status) q.set("status", status);
  // a finished run's figures do not change while you filter or page its trials: ask once
  const reuse = runCache && runCache.id === runId && !runCache.live ? runCache : null;
  const [run, trials] = await Promise.all([reuse || api("/runs/" + enc(runId)), api(`/runs/${enc(runId)}/trials?` + q)]);
  runCache = run;
  const c = run.counts;
  const live = run.live;
  const card = (label, value, cls) => h("div", { class: "card" }, h("b", { class: cls || "" }, value), label);
  const res = run.results;
  const taskRows = res.tasks.map((t) => h("tr", { "data-testid": "task-row" },
    h("td", {}, t.name), h("td", {}, t.trials), h("td", {}, t.passed),
    h("td", {}, pct(t.pass_rate), " ", h("span", { class: "muted" }, ci(t.pass_rate_ci95))),
    h("td", {}, num(t.mean_score), " ", h("span", { class: "muted" }, ci(t.mean_score_ci95))),
    h("td", {}, Object.entries(t.pass_at_k).filter(([k]) => [1, 2, 4, 8, 16, 32, 64].includes(Number(k)) || Number(k) === t.trials)
      .map(([k, v]) => `@${k} ${num(v, 2)}`).join("  ")),
    h("td", {}, Object.entries(t.failures).map(([k, v]) => `${k}: ${v}`).join(", ") || "–")));
  const go = (o, s = status) => { location.hash = `#/run/${enc(runId)}?` + new URLSearchParams({ offset: o, status: s }); };
  const statusSel = h("select", { "data-testid": "status-filter", onchange: (e) => go(0, e.target.value) },
    ["", "passed", "failed", "scored_below", "unscored", "cancelled", "running", "pending"].map((s) =>
      h("option", { value: s, selected: s === status }, s || "every status")));
  const trialRows = trials.items.map((t) => h("tr", { "data-testid": "trial-row" },
    h("td", {}, h("a", { href: "#/trial/" + enc(t.id) }, t.id)), h("td", {}, t.task), h("td", {}, t.trial),
    h("td", { class: t.status }, t.outcome || t.status), h("td", {}, secs(t.seconds)),
    h("td", {}, t.failure_class ? `${t.failure_class}${t.failure_step ? " at " + t.failure_step : ""}` : "")));
  const cancel = run.process_running ? h("button", { "data-testid": "cancel-run", onclick: async () => {
    try { await api(`/runs/${enc(runId)}/cancel`, { method: "POST" }); } catch (err) { alert(err.message); }
    route();
  } }, "cancel run") : null;
  show(
    h("h1", {}, "Run ", h("code", {}, run.id), " ", h("span", { class: live ? "running" : "muted", "data-testid": "run-state" }, live ? "running" : "finished"),
      live ? h("span", { class: "muted live", "data-testid": "live", title: "updated by server-sent events" }, " · live") : null),
    h("p", { class: "muted", "data-testid": "run-meta" }, `bundle ${run.bundle || "–"} · started ${when(run.created_at)}`,
      run.front_end ? ` · from ${run.front_end}` : "", run.runner ? ` · ${run.runner} runner` : "",
      run.agent ? ` · agent ${run.agent}` : "", run.model ? ` · model ${run.model}` : "", " ", cancel,
      run.started_here ? h("a", { href: `/api/v1/runs/${enc(runId)}/log`, target: "_blank" }, " output") : null),
    h("div", { class: "cards", "data-testid": "run-counts" },
      card("trials", c.trials), card("passed", c.passed, "passed"), card("failed", c.failed, "failed"),
      card("unscored", c.unscored, "unscored"), card("running", c.running, "running"),
      card("to start", c.unfinished), card("pass rate", pct(c.pass_rate))),
    runCostCards(run.cost),
    h("h2", {}, "Tasks"),
    table(["task", "trials", "passed", "pass rate (95% CI)", "mean score (95% CI)", "pass@k", "failures"], taskRows, { "data-testid": "task-stats" }),
    h("h2", {}, "Verifiers"),
    (res.verifiers || []).length ? verifierRates(res.verifiers) : h("p", { class: "muted", "data-testid": "verifier-rates" }, "no verifier scored a trial yet"),
    h("h2", {}, "Score distribution"), histogram(res.score_histogram),
    h("h2", {}, "Trials"), h("div", { class: "filters" }, statusSel),
    table(["trial", "task", "#", "outcome", "time", "failure"], trialRows, { "data-testid": "trials" }),
    pager(trials, (o) => go(o)));
  if (live) followRun(runId, c); else closeStream();
}

// ---- one trial -------------------------------------------------------------------------
function pretty(value) { return typeof value === "string" ? value : JSON.stringify(value, null, 2); }

// Why a trial has no verifier rows, in words: still going, failed before a verifier ran, ...
function noVerifiers(r) {
  if (r.status === "pending" || r.status === "running") return "no verifier has run yet: the trial is " + r.status;
  if (r.status === "cancelled") return "no verifier ran: the trial was cancelled";
  if (r.failure && r.failure.step) return `no verifier ran: the trial failed at step '${r.failure.step}'`;
  if (r.status === "failed") return "no verifier ran: the trial failed";
  return "no verifier ran: the task has no verifier step that recorded a result";
}

// The trial's seed table row ({trial, seed, ...}: what its step fields had substituted).
function seedValues(values, seed) {
  const entries = Object.entries(values || (seed === null || seed === undefined ? {} : { seed }));
  if (!entries.length) return h("p", { class: "muted", "data-testid": "seed-values" }, "none recorded");
  return h("table", { class: "narrow", "data-testid": "seed-values" }, h("tbody", {},
    entries.map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, h("code", {}, pretty(v)))))));
}

// The clock and triggers panel: the ledger a register_env_triggers step left in the record
// (outputs.<step>.ledger): the clock, each trigger, its events on the virtual clock, and the
// calls the triggers' actions and executors made through the gateway.
function triggersPanel(outputs) {
  const ledgers = Object.entries(outputs || {}).filter(([, o]) => o && typeof o === "object" && o.ledger);
  if (!ledgers.length) return [];
  const out = [h("h2", {}, "Clock and triggers")];
  for (const [stepId, { ledger }] of ledgers) {
    const c = ledger.clock || {};
    out.push(h("p", { "data-testid": "clock-state" }, c.armed
      ? `clock armed at ${c.t0} ×${c.virtual_seconds_per_real_second} · virtual time ${c.virtual_time} · registered by ${stepId}`
      : `clock not armed · registered by ${stepId}`));
    out.push(table(["trigger", "when", "status", "fired", "failed", "next mark"], (ledger.triggers || []).map((t) =>
      h("tr", { "data-testid": "trigger-row" }, h("td", {}, h("code", {}, t.id)), h("td", {}, pretty(t.when)),
        h("td", { class: t.status === "fired" ? "pass" : t.status === "failed" ? "fail" : "" }, t.status),
        h("td", {}, String(t.fire_count ?? 0)), h("td", {}, String(t.failure_count ?? 0)), h("td", {}, t.next_mark || "–"))),
      { "data-testid": "triggers" }));
    const events = (ledger.events || []).map((e) => {
      const d = e.detail || {};
      const what = d.tool || d.executor || d.permission || "";
      return h("tr", { "data-testid": "trigger-event" }, h("td", {}, when(e.virtual_time)), h("td", {}, when(e.ts)),
        h("td", {}, e.trigger_id || "–"), h("td", {}, e.kind), h("td", {}, what),
        h("td", { class: e.error || d.error ? "fail" : "" }, e.error || d.error || e.until || e.mark || ""));
    });
    out.push(h("h3", {}, "Events"));
    out.push(table(["virtual time", "real time", "trigger", "event", "action", "detail"], events, { "data-testid": "trigger-events" }));
    if (ledger.events_dropped) out.push(h("p", { class: "muted" }, `${ledger.events_dropped} earlier event(s) not kept`));
    const calls = (ledger.calls || []).map((g) => h("tr", { "data-testid": "trigger-call" },
      h("td", {}, when(g.time)), h("td", {}, g.role), h("td", {}, g.env || ""), h("td", {}, h("code", {}, g.tool)),
      h("td", {}, h("pre", {}, pretty(g.arguments))), h("td", {}, h("pre", {}, g.error ? pretty(g.error) : pretty(g.result)))));
    out.push(h("h3", {}, "Calls by triggers and executors"));
    out.push(calls.length ? table(["time", "role", "env", "tool", "arguments", "result"], calls, { "data-testid": "trigger-calls" })
      : h("p", { class: "muted", "data-testid": "trigger-calls" }, "none"));
  }
  return out;
}

async function trialPage(iid) {
  const data = await api("/trials/" + enc(iid));
  const r = data.record;
  const steps = Object.entries(r.steps || {}).map(([id, s]) => h("div", { class: "step " + s.status, "data-testid": "step" },
    h("b", {}, id), ` ${s.status} · ${secs(s.seconds)}` + (s.attempts > 1 ? ` · ${s.attempts} attempts` : ""),
    s.error ? h("div", { class: "error" }, s.error) : null));
  const sections = [];
  const rewards = rewardsByCall(r.step_rewards);
  let callIndex = 0; // the trial's calls over its prompts in step order: step_rewards' call_index
  for (const [pid, output] of Object.entries(r.outputs || {})) {
    if (!output || typeof output !== "object" || !("prompt_id" in output)) continue;
    const traj = (data.trajectories || {})[output.prompt_id] || {};
    sections.push(h("h2", {}, `Prompt ${pid} → ${output.agent_name || "agent"} (${output.status || "?"})`));
    sections.push(h("div", { "data-testid": "trajectory" }, (traj.events || []).map((e) => h("div", { class: "event " + e.type },
      h("b", {}, e.type), " ", e.type === "tool" ? `${e.name}(${JSON.stringify(e.arguments)}) → ${pretty(e.result)}` : pretty(e.content)))));
    const first = callIndex;
    const recorded = traj.gateway_calls || [];
    callIndex += recorded.length || (output.tool_calls || []).length;
    const calls = recorded.map((g, i) => h("tr", { "data-testid": "tool-call" },
      h("td", {}, when(g.time)), h("td", {}, g.role), h("td", {}, g.env || ""), h("td", {}, h("code", {}, g.tool)),
      h("td", {}, h("pre", {}, pretty(g.arguments))), h("td", {}, h("pre", {}, g.error ? pretty(g.error) : pretty(g.result))),
      h("td", {}, g.duration_ms === undefined ? "–" : `${num(g.duration_ms, 1)} ms`),
      rewards.size ? rewardCell(rewards.get(first + i)) : null));
    sections.push(h("h2", {}, "Gateway tool calls"));
    sections.push(table(["time", "role", "env", "tool", "arguments", "result", "duration", ...(rewards.size ? ["step reward"] : [])],
      calls, { "data-testid": "tool-calls" }));
    if (output.response) sections.push(h("p", {}, h("b", {}, "answer: "), output.response));
  }
  const vrows = [];
  for (const [vid, v] of Object.entries(r.verifiers || {})) {
    for (const row of (v && v.results) || []) {
      if (row.skipped) continue;
      vrows.push(h("tr", { "data-testid": "verifier-row" }, h("td", {}, vid), h("td", {}, row.id),
        h("td", { class: row.result ? "pass" : "fail" }, row.result ? "pass" : "fail"),
        h("td", {}, row.description || row.criterion || ""), h("td", {}, row.justification || "")));
    }
  }
  const logs = Object.entries(data.logs || {}).map(([name, text]) => [h("h3", {}, name), h("pre", { "data-testid": "log" }, text)]);
  show(
    h("h1", {}, "Trial ", h("code", {}, r.id)),
    h("p", {}, h("a", { href: "#/run/" + enc(r.run_id) }, "run " + r.run_id), ` · task ${r.task.name} v${r.task.version ?? "?"} · trial ${r.trial}`),
    h("p", { class: r.status, "data-testid": "trial-outcome" }, r.outcome || r.status),
    r.failure ? h("p", { class: "error" }, `${r.failure.class || ""} failure at ${r.failure.step || "?"}: ${r.failure.message}`) : null,
    h("h2", {}, "Steps"), h("div", { class: "dag", "data-testid": "steps" }, steps),
    ...sections,
    ...triggersPanel(r.outputs),
    ...await snapshotsPanel(r.outputs),
    ...costPanel(r.cost),
    h("h2", {}, "Seed values"), seedValues(r.seed_values, r.seed),
    h("h2", {}, "Verifiers"),
    vrows.length ? table(["verifier", "check", "result", "what", "why"], vrows, { "data-testid": "verifiers" })
      : h("p", { class: "muted", "data-testid": "verifiers" }, noVerifiers(r)),
    h("h2", {}, "Logs"), logs.length ? logs.flat() : h("p", { class: "muted" }, "no server or agent output was kept"));
  if (r.status === "running" || r.status === "pending") timer = setTimeout(route, 1000);
}

// ---- entities --------------------------------------------------------------------------
async function entitiesPage(kind, params) {
  const offset = Number(params.get("offset") || 0);
  const id = params.get("id") || "";
  const page = await api(`/${kind}?` + new URLSearchParams({ limit: 50, offset, id }));
  const go = (o, i = id) => { location.hash = `#/entities/${kind}?` + new URLSearchParams({ offset: o, id: i }); };
  const filter = h("input", { placeholder: "id contains", value: id });
  const rows = page.items.map((e) => h("tr", { "data-testid": "entity-row" },
    h("td", {}, h("a", { href: `#/entity/${kind}/${enc(e.id)}` }, e.id)), h("td", {}, e.name || ""),
    h("td", {}, "v" + e.version), h("td", {}, e.versions)));
  show(h("h1", {}, kind[0].toUpperCase() + kind.slice(1)),
    h("div", { class: "filters" }, filter, h("button", { onclick: () => go(0, filter.value.trim()) }, "filter")),
    table(["id", "name", "latest", "versions"], rows, { "data-testid": "entities" }), pager(page, (o) => go(o)));
}

async function entityPage(kind, entityId, params) {
  const path = `/${kind}/${enc(entityId)}`;
  const versions = await api(path + "/versions");
  const chosen = Number(params.get("version") || versions[0].version);
  const entity = await api(path + "?version=" + chosen);
  const rows = versions.map((v) => h("tr", { "data-testid": "version-row" },
    h("td", {}, h("a", { href: `#/entity/${kind}/${enc(entityId)}?version=${v.version}` }, "v" + v.version)),
    h("td", {}, when(new Date(v.created_at * 1000).toISOString())), h("td", {}, h("code", {}, v.digest.slice(0, 19))),
    h("td", {}, v.runs === null ? h("span", { class: "muted" }, "not known") :
      v.runs.length ? v.runs.slice(0, 20).map((id) => [h("a", { href: "#/run/" + enc(id) }, id), " "]).flat() : h("span", { class: "muted" }, "no runs"))));
  show(h("h1", {}, kind.slice(0, -1) + " ", h("code", {}, entityId)),
    h("h2", {}, "Versions"), table(["version", "stored", "digest", "used by runs"], rows, { "data-testid": "versions" }),
    h("h2", {}, `Content of v${chosen}`), h("pre", {}, JSON.stringify(entity.content, null, 2)),
    entity.files ? [h("h2", {}, "Files"), h("pre", {}, Object.keys(entity.files).join("\n"))] : null);
}

// ---- routing ---------------------------------------------------------------------------
async function route() {
  clearTimeout(timer);
  const [path, query] = (location.hash.slice(1) || "/runs").split("?");
  if (stream && path !== "/run/" + enc(stream.runId)) closeStream();
  if (runCache && path !== "/run/" + enc(runCache.id)) runCache = null;
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const section = parts[0] === "entities" || parts[0] === "entity" ? parts[1] : "runs";
  document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.nav === section));
  try {
    if (parts[0] === "run" && parts[1]) await runPage(parts[1], params);
    else if (parts[0] === "trial" && parts[1]) await trialPage(parts[1]);
    else if (parts[0] === "compare") await comparePage(params);
    else if (parts[0] === "entities" && parts[1]) await entitiesPage(parts[1], params);
    else if (parts[0] === "entity" && parts[2]) await entityPage(parts[1], parts.slice(2).join("/"), params);
    else await runsPage(params);
  } catch (err) { fail(err); }
}

window.addEventListener("hashchange", route);
document.addEventListener("DOMContentLoaded", route);
