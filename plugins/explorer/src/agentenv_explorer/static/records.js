// What a trial record adds when recorded: its cost, the per-step rewards of its gateway calls
// and the env states of its task snapshots (before and after); the run page's cost totals.
// Uses app.js's helpers.
"use strict";

const usd = (x) => (typeof x === "number" ? "$" + x.toFixed(4) : "no price set");
const count = (x) => (typeof x === "number" ? x.toLocaleString("en-US") : "0");

// A trial's `cost`: tokens per model, sandbox-seconds per provider, wall time and US dollars.
function costPanel(cost) {
  if (!cost) return [h("h2", {}, "Cost"), h("p", { class: "muted", "data-testid": "cost" }, "not recorded")];
  const models = Object.entries(cost.models || {}).map(([m, t]) => h("tr", { "data-testid": "cost-model" },
    h("td", {}, h("code", {}, m)), h("td", {}, count(t.prompt_tokens)), h("td", {}, count(t.completion_tokens)), h("td", {}, count(t.total_tokens))));
  const boxes = Object.entries(cost.sandbox_seconds || {}).map(([p, s]) => `${p} ${secs(s)}`).join(", ");
  return [h("h2", {}, "Cost"),
    h("div", { class: "cards", "data-testid": "cost" },
      h("div", { class: "card" }, h("b", { "data-testid": "cost-usd" }, usd(cost.usd)), "US dollars"),
      h("div", { class: "card" }, h("b", { "data-testid": "cost-tokens" }, count(cost.total_tokens)), `tokens (${count(cost.prompt_tokens)} in, ${count(cost.completion_tokens)} out)`),
      h("div", { class: "card" }, h("b", { "data-testid": "cost-sandboxes" }, boxes || "none"), "sandbox-seconds"),
      h("div", { class: "card" }, h("b", {}, secs(cost.wall_seconds)), "wall time")),
    (cost.unpriced || []).length ? h("p", { class: "muted", "data-testid": "cost-unpriced" }, "no price for: " + cost.unpriced.join(", ")) : null,
    models.length ? table(["model", "input tokens", "output tokens", "total"], models, { "data-testid": "cost-models" }) : null];
}

// The run page's totals over its trials' records (or why they were not added up).
function runCostCards(cost) {
  if (!cost) return null;
  if (!cost.summed) return h("p", { class: "muted", "data-testid": "run-cost" },
    `costs not added up here: ${count(cost.records)} trial records (the page sums up to ${count(cost.summed_up_to)}); agent-env runs show RUN adds them up`);
  if (!cost.trials) return h("p", { class: "muted", "data-testid": "run-cost" }, "no trial recorded a cost");
  const boxes = Object.entries(cost.sandbox_seconds || {}).map(([p, s]) => `${p} ${secs(s)}`).join(", ");
  const card = (label, value, testid) => h("div", { class: "card" }, h("b", { "data-testid": testid }, value), label);
  return h("div", { class: "cards", "data-testid": "run-cost" },
    card(`US dollars (${cost.trials} trial records)`, usd(cost.usd), "run-cost-usd"),
    card(`tokens (${count(cost.prompt_tokens)} in, ${count(cost.completion_tokens)} out)`, count(cost.total_tokens), "run-cost-tokens"),
    card("sandbox-seconds", boxes || "none", "run-cost-sandboxes"), card("wall time, summed", secs(cost.wall_seconds)));
}

// call_index -> its step_rewards entries. call_index counts the trial's recorded calls over
// its prompts in step order (as call_reward_verifier numbers them).
function rewardsByCall(stepRewards) {
  const by = new Map();
  for (const r of stepRewards || []) {
    if (!by.has(r.call_index)) by.set(r.call_index, []);
    by.get(r.call_index).push(r);
  }
  return by;
}
const rewardCell = (entries) => h("td", { "data-testid": "step-reward" }, (entries || []).map((r) =>
  h("div", { class: r.score >= 1 ? "pass" : r.score <= 0 ? "fail" : "" }, `${num(r.score, 2)} `, h("span", { class: "muted" }, r.verifier))));

// Every path of a JSON value with its leaf value: {"a.b[0]": 1, ...} (an empty object or list is a leaf).
// An env missing from a snapshot has no paths: all of the other's are added or removed.
function flatten(value, path, out) {
  if (value === undefined) return out;
  if (value && typeof value === "object" && Object.keys(value).length) {
    for (const [k, v] of Object.entries(value)) flatten(v, Array.isArray(value) ? `${path}[${k}]` : path ? `${path}.${k}` : k, out);
  } else out[path || "(state)"] = value;
  return out;
}

// What changed in one env's state from snapshot A to snapshot B, key by key.
function stateDiff(a, b) {
  const fa = flatten(a, "", {}), fb = flatten(b, "", {});
  const rows = [];
  for (const key of [...new Set([...Object.keys(fa), ...Object.keys(fb)])].sort()) {
    const inA = key in fa, inB = key in fb;
    if (inA && inB && JSON.stringify(fa[key]) === JSON.stringify(fb[key])) continue;
    const change = !inA ? "added" : !inB ? "removed" : "changed";
    rows.push(h("tr", { "data-testid": "state-change" }, h("td", { class: change === "removed" ? "fail" : change === "added" ? "pass" : "" }, change),
      h("td", {}, h("code", {}, key)), h("td", {}, inA ? h("code", {}, pretty(fa[key])) : "–"), h("td", {}, inB ? h("code", {}, pretty(fb[key])) : "–")));
  }
  return rows;
}

// The env states of the trial's snapshot_task steps (outputs.<step>.snapshot), each fetched
// from /api/v1/snapshots, and for two or more what changed between consecutive ones.
async function snapshotsPanel(outputs) {
  const taken = Object.entries(outputs || {}).filter(([, o]) => o && typeof o === "object" && typeof o.snapshot === "string");
  if (!taken.length) return [];
  const snaps = await Promise.all(taken.map(([step, o]) => api("/snapshots/" + enc(o.snapshot))
    .then((s) => ({ step, s }), (err) => ({ step, ref: o.snapshot, error: err.message }))));
  const out = [h("h2", {}, "Env state")];
  for (const { step, s, ref, error } of snaps) {
    if (error) { out.push(h("p", { class: "error", "data-testid": "snapshot-error" }, `${step}: snapshot ${ref}: ${error}`)); continue; }
    out.push(h("h3", { "data-testid": "snapshot" }, `at step ${step}: snapshot ${s.ref}`),
      h("p", { class: "muted" }, `${s.digest} · ${s.call_position} gateway call(s) before it · clock ${s.clock.armed ? "armed" : "not armed"}`));
    for (const [env, st] of Object.entries(s.envs)) {
      out.push(h("div", { "data-testid": "env-state" }, h("b", {}, env), " ", h("code", { class: "muted" }, st.digest),
        h("pre", {}, JSON.stringify(st.state, null, 2))));
    }
  }
  const ok = snaps.filter((x) => x.s);
  for (let i = 1; i < ok.length; i++) {
    const [a, b] = [ok[i - 1], ok[i]];
    out.push(h("h3", {}, `What changed from ${a.step} to ${b.step}`));
    for (const env of [...new Set([...Object.keys(a.s.envs), ...Object.keys(b.s.envs)])].sort()) {
      const [ea, eb] = [a.s.envs[env], b.s.envs[env]];
      const rows = stateDiff(ea ? ea.state : undefined, eb ? eb.state : undefined);
      out.push(h("p", { "data-testid": "state-diff-env" }, h("b", {}, env), (ea && eb && ea.digest === eb.digest) ? " unchanged" : ` ${rows.length} change(s)`));
      if (rows.length) out.push(table(["change", "key", "before", "after"], rows, { "data-testid": "state-diff" }));
    }
  }
  return out;
}
