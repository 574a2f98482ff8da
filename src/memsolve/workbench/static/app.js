// memsolve workbench: renders what the server computes with memsolve's own pipeline.
// No rule is decided here: outcomes, scores, reasons, the tray and the frontier all come from
// /api/run; this script lays them out, plays the four stages, and keeps the baseline and the
// notebook in the browser's storage.
"use strict";

const STAGE_SECONDS = 10;
const LAST_STAGE = 4;
const reducedMotion = window.matchMedia("(prefers-reduced-motion: reduce)");

const state = {
  spec: [], policyFile: "", original: "", yaml: "", knobs: {}, page: null, failed: false,
  baseline: null, t: 0, playing: false, speed: 1, lastTick: 0, timer: null, pending: {}, queued: null,
  inflight: false,
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function num(value, digits = 3) {
  if (value === null || value === undefined) return "–";
  return Number(value).toFixed(digits);
}

function storageKey(what) { return `memsolve.workbench.${what}:${state.policyFile}`; }

// ---------------------------------------------------------------- server
async function post(path, body) {
  const response = await fetch(path, {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body),
  });
  return response;
}

// The answer's JSON; an answer that is not JSON (a proxy's page, a server failure's plain text)
// becomes one error line for the editor, so the page never throws on it.
async function answer(response) {
  const text = await response.text();
  if ((response.headers.get("Content-Type") || "").startsWith("application/json")) {
    try { return JSON.parse(text); } catch { /* fall through: said JSON, was not */ }
  }
  const first = text.trim().split("\n")[0].slice(0, 200) || response.statusText;
  const message = `error: the workbench server answered ${response.status}` + (first ? `: ${first}` : "");
  return {error: {message, line: null, column: null, path: "", field: null, exit_code: 2}};
}

// Edits are sent one request at a time: each applies to the policy text the previous answer
// wrote, so a quick second change never starts from stale text (and never undoes the first).
// Edits made while a request is out are merged and sent together when it returns.
function run(edits) {
  state.queued = {...(state.queued || {}), ...(edits || {})};
  if (!state.inflight) pump();
}

async function pump() {
  state.inflight = true;
  document.body.dataset.busy = "true";
  while (state.queued) {
    const edits = state.queued;
    state.queued = null;
    let data;
    try {
      data = await answer(await post("/api/run", {yaml: $("yaml").value, edits}));
    } catch (error) {
      showBanner(`The workbench server did not answer (${error.message}); is memsolve workbench still running?`);
      continue;
    }
    receive(data);
  }
  state.inflight = false;
  document.body.dataset.busy = "false";
  document.body.dataset.runs = String(Number(document.body.dataset.runs || 0) + 1);  // tests wait on it
}

function receive(data) {
  if (data.yaml !== undefined && data.yaml !== $("yaml").value && document.activeElement !== $("yaml")) {
    $("yaml").value = data.yaml;
  }
  if (data.yaml !== undefined) state.yaml = data.yaml;
  if (data.knobs) fillKnobs(data.knobs);
  drawGutter(data.error);
  clearErrors();
  if (data.error) {
    showError(data.error);
    state.failed = true;
    document.querySelectorAll(".run .result").forEach((n) => n.classList.add("stale"));
    return;
  }
  state.failed = false;
  document.querySelectorAll(".run .result").forEach((n) => n.classList.remove("stale"));
  state.page = data;
  render();
  restart(!reducedMotion.matches);
}

// ---------------------------------------------------------------- knobs
function buildKnobs(spec) {
  const form = $("knobs");
  form.textContent = "";
  for (const knob of spec) {
    const id = `knob-${knob.name}`;
    let input;
    if (knob.kind === "bool") {
      input = el("input", {type: "checkbox", id, name: knob.name});
    } else if (knob.kind === "choice") {
      input = el("select", {id, name: knob.name}, knob.choices.map((c) => el("option", {value: c, text: c})));
    } else {
      input = el("input", {type: "text", id, name: knob.name,
        inputmode: knob.kind === "number" ? "decimal" : null,
        list: knob.name === "query" ? "questions" : null,
        placeholder: knob.removable ? "(none)" : null});
    }
    const error = el("p", {class: "error", id: `err-${knob.name}`, role: "alert", hidden: true});
    const was = el("span", {class: "was", id: `was-${knob.name}`});
    const label = knob.kind === "bool"
      ? el("label", {for: id}, input, knob.label, " ", was)
      : el("label", {for: id}, knob.label, " ", was);
    const row = el("div", {class: `knob ${knob.kind}`, "data-knob": knob.name}, label,
      knob.kind === "bool" ? null : input, error);
    form.append(row);
    if (knob.kind === "bool" || knob.kind === "choice") {
      input.addEventListener("change", () => edit(knob.name, fieldValue(input)));
    } else {
      input.addEventListener("input", () => debounce(knob.name, () => edit(knob.name, fieldValue(input))));
      input.addEventListener("change", () => flush(knob.name));
      input.addEventListener("keydown", (event) => { if (event.key === "Enter") flush(knob.name); });
    }
  }
}

function fieldValue(input) { return input.type === "checkbox" ? input.checked : input.value; }

function fillKnobs(values) {
  state.knobs = values;
  for (const [name, value] of Object.entries(values)) {
    const input = $(`knob-${name}`);
    if (!input || input === document.activeElement) continue;
    if (input.type === "checkbox") input.checked = Boolean(value);
    else input.value = value;
  }
}

function debounce(key, action, wait = 350) {
  clearTimeout(state.pending[key]?.timer);
  state.pending[key] = {action, timer: setTimeout(() => flush(key), wait)};
}

function flush(key) {
  const pending = state.pending[key];
  if (!pending) return;
  clearTimeout(pending.timer);
  delete state.pending[key];
  pending.action();
}

function edit(name, value) {
  if (state.pending.yaml) { clearTimeout(state.pending.yaml.timer); delete state.pending.yaml; }
  run({[name]: value});
}

// ---------------------------------------------------------------- errors
function clearErrors() {
  document.querySelectorAll("#knobs .error").forEach((p) => { p.hidden = true; p.textContent = ""; });
  document.querySelectorAll("#knobs .knob").forEach((k) => k.classList.remove("invalid"));
  $("yaml-error").hidden = true;
  $("yaml-error").textContent = "";
  hideBanner();
}

function showError(error) {
  const where = error.line ? ` (line ${error.line}, column ${error.column})` : "";
  if (error.field && $(`err-${error.field}`)) {
    const slot = $(`err-${error.field}`);
    slot.textContent = error.message;
    slot.hidden = false;
    slot.closest(".knob").classList.add("invalid");
  }
  const box = $("yaml-error");
  box.textContent = error.message + where;
  if (error.line) {
    box.append(" ", el("button", {type: "button", class: "goto", text: `Go to line ${error.line}`}));
    box.querySelector(".goto").addEventListener("click", () => gotoLine(error.line));
  }
  box.hidden = false;
  showBanner(state.page ? "The result below is the last valid one: fix the error to see this policy's result."
    : "Fix the error to see a result.");
}

function showBanner(text) { $("banner").textContent = text; $("banner").hidden = false; }
function hideBanner() { $("banner").hidden = true; }

function gotoLine(line) {
  const area = $("yaml");
  const lines = area.value.split("\n");
  const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
  area.focus();
  area.setSelectionRange(start, start + (lines[line - 1] || "").length);
  const height = area.scrollHeight / Math.max(lines.length, 1);
  area.scrollTop = Math.max(0, (line - 4) * height);
}

function drawGutter(error) {
  const gutter = $("gutter");
  gutter.textContent = "";
  const count = $("yaml").value.split("\n").length;
  for (let i = 1; i <= count; i++) {
    gutter.append(el("span", {class: error && error.line === i ? "bad" : null, text: String(i)}), "\n");
  }
  gutter.scrollTop = $("yaml").scrollTop;
}

// ---------------------------------------------------------------- rendering
function render() {
  const page = state.page;
  const result = page.result;
  const view = page.view;
  $("title").textContent = `${result.policy.name}: ${page.tenant ? `tenant ${page.tenant}` : "no tenant (isolation off)"}`;
  renderStages(view);
  renderTable(view);
  const price = result.price;
  $("summary").textContent = `Objective ${num(result.objective, 4)} · ${result.tokens_used} of ` +
    `${result.budget.tokens ?? "∞"} tokens · at most ${result.budget.max_records ?? "∞"} records · ` +
    `price λ ${num(price.lambda, 3)} (${num(price.per_token, 4)} per token) · engine ${result.solver.engine}` +
    ` (${result.solver.status})`;
  $("others").textContent = view.other_tenants
    ? `${view.other_tenants} record(s) of other tenants are counted, never shown.` : "";
  renderCompare(page.compare);
  renderSupporting(page.supporting);
  renderFrontier(page.frontier, result);
  $("json").textContent = page.result_json;
  renderBaseline();
  renderTray();
}

function card(row, extra, out) {
  const meta = [row.store, row.session, row.age !== null && row.age !== undefined ? `age ${num(row.age, 1)}` : null]
    .filter(Boolean).join(" · ");
  const text = row.text ? (row.text.length > 90 ? row.text.slice(0, 89) + "…" : row.text) : "";
  return el("div", {class: out ? "card out" : "card", "data-id": row.id, title: row.text || ""},
    el("b", {text: row.id}), " ", el("span", {class: "meta", text: meta}),
    el("div", {text}), extra ? el("span", {class: out ? "why" : "meta", text: extra}) : null);
}

function renderStages(view) {
  const rows = view.rows;
  const byId = Object.fromEntries(rows.map((r) => [r.id, r]));
  const stored = $("stage-stored");
  stored.textContent = "";
  stored.append(...rows.map((r) => card(r)));
  if (view.other_tenants) stored.append(el("p", {class: "hint", text: `+ ${view.other_tenants} of other tenants (counted)`}));
  if (!rows.length) stored.append(el("p", {class: "hint", text: "No record of this tenant."}));

  const scope = $("stage-scope");
  scope.textContent = "";
  scope.append(...rows.filter((r) => r.stage !== "scope").map((r) => card(r, "in scope")));
  scope.append(...rows.filter((r) => r.stage === "scope").map((r) => card(r, `${r.rule}: ${r.reason}`, true)));

  const ranking = $("stage-ranking");
  ranking.textContent = "";
  ranking.append(...view.ranked.map((id, i) => card(byId[id],
    `#${i + 1} · score ${num(byId[id].score)} (similarity ${num(byId[id].similarity)})`)));
  ranking.append(...rows.filter((r) => r.stage === "ranking").map((r) => card(r, `${r.rule}: ${r.reason}`, true)));

  const tray = $("stage-tray");
  tray.textContent = "";
  tray.append(...rows.filter((r) => r.stage === "tray").map((r) => card(r, `${r.level} · ${r.tokens} tokens`)));
  tray.append(...rows.filter((r) => r.stage === "packing").map((r) => card(r, `dropped: ${r.reason}`, true)));
  if (!rows.some((r) => r.stage === "tray")) tray.append(el("p", {class: "hint", text: "Empty: see why below."}));
}

function renderTray() {
  const box = $("tray");
  box.textContent = "";
  if (!state.page) return;
  if (currentStage() < LAST_STAGE) {
    box.append(el("p", {class: "empty",
      text: "The tray is populated at the final stage (Play, or Next stage). No answer is generated."}));
    return;
  }
  const view = state.page.view;
  const chosen = view.rows.filter((r) => r.stage === "tray");
  if (chosen.length) {
    box.append(...chosen.map((r) => el("div", {class: "chosen", "data-id": r.id},
      el("b", {text: r.id}), ` (${r.level}, ${r.tokens} tokens): `, r.chosen_text ?? r.text ?? "")));
  } else {
    box.append(el("p", {class: "empty", text: "The context is empty. That is a valid result; here is why:"}),
      el("ul", {id: "why-empty"}, (view.empty || []).map((line) => el("li", {text: line}))));
  }
}

function renderTable(view) {
  const body = $("records").querySelector("tbody");
  body.textContent = "";
  for (const r of view.rows) {
    body.append(el("tr", {class: r.outcome, "data-id": r.id},
      el("td", {text: r.id}), el("td", {text: r.store ?? ""}), el("td", {text: r.session ?? ""}),
      el("td", {class: "num", text: r.age === null || r.age === undefined ? "" : num(r.age, 1)}),
      el("td", {class: "text", text: r.text ?? ""}),
      el("td", {class: "num", text: num(r.similarity)}), el("td", {class: "num", text: num(r.score)}),
      el("td", {class: "outcome", text: r.outcome}), el("td", {class: "rule", text: r.rule ?? ""}),
      el("td", {class: "reason", text: r.reason ?? (r.outcome === "selected" ? `${r.level}, ${r.tokens} tokens` : "")}),
      el("td", {class: "was"})));
  }
}

function renderCompare(compare) {
  const body = $("compare").querySelector("tbody");
  body.textContent = "";
  const picks = (side) => side.selected.map((s) => `${s.id}@${s.level}`).join(", ") || "(none)";
  const rows = [["Selected", picks(compare.exact), picks(compare.greedy)],
    ["Objective", num(compare.exact.objective, 4), num(compare.greedy.objective, 4)],
    ["Utility", num(compare.exact.utility, 4), num(compare.greedy.utility, 4)],
    ["Tokens used", compare.exact.tokens_used, compare.greedy.tokens_used]];
  for (const [name, a, b] of rows) body.append(el("tr", {}, el("th", {scope: "row", text: name}), el("td", {text: a}),
    el("td", {text: b})));
  const share = compare.exact.objective > 0 ? ` (${(100 * compare.greedy_loses / compare.exact.objective).toFixed(1)} %)` : "";
  $("loss").textContent = `Greedy loses ${num(compare.greedy_loses, 4)}${share} against the exact optimum` +
    (compare.differ.length ? `; they differ on ${compare.differ.join(", ")}.` : "; both pick the same records.");
}

function renderSupporting(counter) {
  const box = $("supporting");
  box.hidden = !counter;
  if (!counter) return;
  if (!counter.labelled) {
    box.textContent = `Supporting facts: no labelled query in ${counter.file} matches this question.`;
    return;
  }
  const side = (engine) => {
    const ids = counter.covered[engine];
    return `${engine} covers ${ids.length} of ${counter.total}${ids.length ? ` (${ids.join(", ")})` : ""}`;
  };
  box.textContent = `Supporting facts (fixture labels from ${counter.file}, not a measured answer quality): ` +
    `${side("exact")}; ${side("greedy")}.` +
    (counter.outside_view ? ` ${counter.outside_view} labelled record(s) are outside this tenant's view.` : "");
}

function renderFrontier(points, result) {
  const box = $("frontier");
  box.textContent = "";
  if (!Array.isArray(points)) {
    box.append(el("p", {class: "error", text: points && points.error ? points.error : "no frontier"}));
    return;
  }
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  const W = 480, H = 240, L = 56, R = 14, T = 14, B = 40;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("role", "img");
  const budget = result.budget.tokens ?? 0;
  const maxX = Math.max(budget, ...points.map((p) => p.budget), 1);
  const maxY = Math.max(...points.map((p) => p.objective), 1e-9);
  const x = (v) => L + (W - L - R) * v / maxX;
  const y = (v) => H - B - (H - T - B) * v / maxY;
  const add = (tag, attrs, text) => {
    const node = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    svg.append(node);
    return node;
  };
  svg.setAttribute("aria-label", `Best objective at every budget up to ${maxX}: ` +
    points.map((p) => `${p.budget} → ${num(p.objective, 3)}`).join(", "));
  add("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#5b6475"});
  add("line", {x1: L, y1: T, x2: L, y2: H - B, stroke: "#5b6475"});
  let d = "";
  points.forEach((p, i) => {
    d += i === 0 ? `M ${x(p.budget)} ${y(p.objective)}` : ` H ${x(p.budget)} V ${y(p.objective)}`;
  });
  d += ` H ${x(maxX)}`;
  add("path", {d, fill: "none", stroke: "#2357c6", "stroke-width": 2});
  for (const p of points) {
    add("circle", {cx: x(p.budget), cy: y(p.objective), r: 3, fill: "#2357c6"});
    add("text", {x: x(p.budget), y: H - B + 14, "font-size": 10, "text-anchor": "middle", fill: "#5b6475"}, p.budget);
  }
  add("line", {x1: x(budget), y1: T, x2: x(budget), y2: H - B, stroke: "#b3261e", "stroke-dasharray": "4 3"});
  add("text", {x: x(budget) - 4, y: T + 10, "font-size": 10, "text-anchor": "end", fill: "#b3261e"},
    `budget ${budget}: ${num(result.objective, 3)}`);
  add("text", {x: L - 6, y: T + 8, "font-size": 10, "text-anchor": "end", fill: "#5b6475"}, num(maxY, 2));
  add("text", {x: L - 6, y: H - B, "font-size": 10, "text-anchor": "end", fill: "#5b6475"}, "0");
  add("text", {x: (L + W - R) / 2, y: H - 6, "font-size": 11, "text-anchor": "middle", fill: "#1d2330"},
    "budget (tokens)");
  add("text", {x: 12, y: (T + H - B) / 2, "font-size": 11, "text-anchor": "middle", fill: "#1d2330",
    transform: `rotate(-90 12 ${(T + H - B) / 2})`}, "best objective");
  box.append(svg);
}

// ---------------------------------------------------------------- playback
function currentStage() { return Math.min(LAST_STAGE, Math.floor(state.t / STAGE_SECONDS) + 1); }

function showStage() {
  const stage = currentStage();
  document.querySelectorAll(".stage").forEach((node) => {
    const k = Number(node.dataset.stage);
    node.classList.toggle("hidden", k > stage);
    node.classList.toggle("current", k === stage);
  });
  const total = (LAST_STAGE - 1) * STAGE_SECONDS;
  $("clock").textContent = `${Math.min(state.t, total).toFixed(1)} s of ${total} s · stage ${stage} of ${LAST_STAGE}` +
    (state.playing ? " · playing" : " · paused");
  $("play").textContent = state.playing ? "Pause" : "Play";
  renderTray();
}

function settle() {
  if (!state.playing) return;
  const now = performance.now();
  state.t += (now - state.lastTick) / 1000 * state.speed;
  state.lastTick = now;
}

function tick() {
  settle();
  const end = (LAST_STAGE - 1) * STAGE_SECONDS;
  if (state.t >= end) { state.t = end; pause(); }
  showStage();
}

function play() {
  if (state.playing) return;
  if (state.t >= (LAST_STAGE - 1) * STAGE_SECONDS) state.t = 0;
  state.playing = true;
  state.lastTick = performance.now();
  state.timer = setInterval(tick, 100);
  showStage();
}

function pause() {
  settle();
  state.playing = false;
  clearInterval(state.timer);
  state.timer = null;
  showStage();
}

function nextStage() {
  pause();
  state.t = Math.min((LAST_STAGE - 1) * STAGE_SECONDS, (Math.floor(state.t / STAGE_SECONDS) + 1) * STAGE_SECONDS);
  showStage();
}

function restart(autoplay) {
  pause();
  state.t = 0;
  showStage();
  if (autoplay) play();
}

// ---------------------------------------------------------------- baseline
function snapshot() {
  const page = state.page;
  return {
    tenant: page.tenant, knobs: {...state.knobs}, yaml: state.yaml,
    outcomes: Object.fromEntries(page.view.rows.map((r) => [r.id, {outcome: r.outcome, rule: r.rule}])),
    selected: page.result.selected.map((s) => s.id), objective: page.result.objective,
  };
}

function describe(o) { return o.rule ? `${o.outcome} (${o.rule})` : o.outcome; }

function capture() {
  if (!state.page || state.failed) return;
  state.baseline = snapshot();
  localStorage.setItem(storageKey("baseline"), JSON.stringify(state.baseline));
  renderBaseline();
}

function clearBaseline() {
  state.baseline = null;
  localStorage.removeItem(storageKey("baseline"));
  renderBaseline();
}

function renderBaseline() {
  const base = state.baseline;
  $("capture").disabled = Boolean(base);
  $("replace").disabled = !base;
  $("clear").disabled = !base;
  const list = $("differences");
  list.textContent = "";
  document.querySelectorAll("#knobs .was").forEach((s) => { s.textContent = ""; });
  document.querySelectorAll("#records tr.changed").forEach((tr) => tr.classList.remove("changed"));
  document.querySelectorAll("#records td.was").forEach((td) => { td.textContent = ""; });
  if (!base) { $("baseline-status").textContent = "No baseline."; return; }
  if (!state.page) return;
  const now = snapshot();
  const items = [];
  for (const knob of state.spec) {
    const a = base.knobs[knob.name], b = now.knobs[knob.name];
    if (String(a) !== String(b)) {
      items.push(`${knob.label}: ${a === "" ? "(none)" : a} → ${b === "" ? "(none)" : b}`);
      $(`was-${knob.name}`).textContent = `(baseline: ${a === "" ? "none" : a})`;
    }
  }
  if (base.yaml !== now.yaml && !items.length) items.push("The policy text changed.");
  if (base.tenant !== now.tenant) {
    items.push("The baseline was captured for another tenant; records are compared only within one tenant.");
  } else {
    for (const [id, o] of Object.entries(now.outcomes)) {
      const was = base.outcomes[id];
      const row = document.querySelector(`#records tr[data-id="${CSS.escape(id)}"]`);
      if (!was) {
        items.push(`${id}: not in the baseline → ${describe(o)}`);
      } else if (was.outcome !== o.outcome || was.rule !== o.rule) {
        items.push(`${id}: ${describe(was)} → ${describe(o)}`);
        if (row) { row.classList.add("changed"); row.querySelector("td.was").textContent = describe(was); }
      }
    }
    for (const id of Object.keys(base.outcomes)) {
      if (!(id in now.outcomes)) items.push(`${id}: no longer read (${describe(base.outcomes[id])} in the baseline)`);
    }
    const tray = (ids) => ids.length ? ids.join(", ") : "(empty)";
    if (tray(base.selected) !== tray(now.selected)) items.push(`Tray: ${tray(base.selected)} → ${tray(now.selected)}`);
  }
  $("baseline-status").textContent = items.length ? `${items.length} difference(s) from the baseline:`
    : "Same as the baseline.";
  list.append(...items.map((text) => el("li", {text})));
}

// ---------------------------------------------------------------- notebook
function observe() {
  if (!state.page) return;
  const rows = state.page.view.rows;
  const k = state.knobs;
  const settings = `query "${k.query}", tenant ${k.tenant || "(none)"}, stores ${k.stores}, previous ${k.include_previous}` +
    `, max age ${k.max_age || "(none)"}, latest key ${k.latest_key}, budget ${k.budget}, max records ` +
    `${k.max_records || "(none)"}, recency ${k.recency_weight}, engine ${k.engine}`;
  const tray = rows.filter((r) => r.outcome === "selected").map((r) => r.id).join(", ") || "(empty)";
  const out = rows.filter((r) => r.outcome !== "selected").map((r) => `${r.id} ${r.rule || r.outcome}`).join(", ");
  const line = `- [${settings}] tray: ${tray}; left out: ${out || "(none)"}`;
  const notes = $("notes");
  notes.value = notes.value ? `${notes.value.replace(/\n*$/, "")}\n${line}\n` : `${line}\n`;
  saveNotes();
}

function saveNotes() { localStorage.setItem(storageKey("notes"), $("notes").value); }

function exportNotes() {
  const text = `# memsolve workbench notes\n# policy: ${state.policyFile}\n\n${$("notes").value}`;
  download(new Blob([text], {type: "text/plain"}), "memsolve-notes.txt");
}

function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const link = el("a", {href: url, download: name});
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

async function savePolicy() {
  const response = await post("/api/save", {yaml: $("yaml").value});
  if (!response.ok) {
    const data = await answer(response);
    clearErrors();
    showError(data.error);
    return;
  }
  const match = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "");
  download(await response.blob(), match ? match[1] : "policy.yaml");
}

// ---------------------------------------------------------------- fullscreen
function toggleFullscreen() {
  if (document.fullscreenElement) document.exitFullscreen();
  else $("experiment").requestFullscreen().catch((error) => showBanner(`Full screen refused: ${error.message}`));
}

// ---------------------------------------------------------------- start
async function start() {
  const data = await answer(await fetch("/api/start"));
  if (!data.controls) { showBanner(data.error.message); return; }
  state.spec = data.controls;
  state.policyFile = data.policy_file;
  state.original = data.original;
  $("policy-file").textContent = data.policy_file;
  $("records-file").textContent = data.records_file;
  document.querySelectorAll(".run section, .run .tray, .run .scroll, .run .summary").forEach(
    (n) => n.classList.add("result"));
  buildKnobs(data.controls);
  $("knobs").append(el("datalist", {id: "questions"}, data.questions.map((q) => el("option", {value: q}))));
  $("yaml").value = data.yaml;
  state.yaml = data.yaml;
  $("notes").value = localStorage.getItem(storageKey("notes")) || "";
  try { state.baseline = JSON.parse(localStorage.getItem(storageKey("baseline")) || "null"); }
  catch { state.baseline = null; }
  if (data.error) { $("title").textContent = data.policy_file; }
  receive(data);
  document.body.dataset.ready = "true";
}

function wire() {
  $("play").addEventListener("click", () => (state.playing ? pause() : play()));
  $("next").addEventListener("click", nextStage);
  $("restart").addEventListener("click", () => restart(false));
  $("speed").addEventListener("change", () => { settle(); state.speed = Number($("speed").value); });
  document.addEventListener("visibilitychange", () => { if (document.hidden) pause(); });
  $("capture").addEventListener("click", capture);
  $("replace").addEventListener("click", capture);
  $("clear").addEventListener("click", clearBaseline);
  $("notes").addEventListener("input", saveNotes);
  $("observe").addEventListener("click", observe);
  $("export").addEventListener("click", exportNotes);
  $("save-policy").addEventListener("click", savePolicy);
  $("fullscreen").addEventListener("click", toggleFullscreen);
  document.addEventListener("fullscreenchange", () => {
    $("fullscreen").textContent = document.fullscreenElement ? "Exit full screen" : "Expand experiment";
  });
  const area = $("yaml");
  area.addEventListener("input", () => {
    drawGutter(null);
    debounce("yaml", () => { state.yaml = area.value; run({}); }, 400);
  });
  area.addEventListener("scroll", () => { $("gutter").scrollTop = area.scrollTop; });
}

wire();
start();
