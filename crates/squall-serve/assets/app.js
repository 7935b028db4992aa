// The control tool's page: plain DOM and fetch, no framework, no build step.
// The access token travels in the SameSite=Strict cookie the server set
// when the page was opened with ?token=…; the token is taken out of the
// address bar so that it is not kept in the history.
"use strict";

const $ = (id) => document.getElementById(id);
if (location.search.includes("token=")) history.replaceState(null, "", "/");

function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "class") e.className = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e[k] = v;
  }
  for (const c of children) e.append(c);
  return e;
}

async function api(method, path, body, headers = {}) {
  const init = { method, headers: { ...headers }, credentials: "same-origin" };
  if (body !== undefined) { init.body = JSON.stringify(body); init.headers["Content-Type"] = "application/json"; }
  const r = await fetch(path, init);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { data = { error: text }; }
  return { status: r.status, ok: r.ok, data, etag: r.headers.get("ETag") };
}

function status(text) { $("status").textContent = text; }

// ---- tabs
for (const b of document.querySelectorAll("nav button")) {
  b.addEventListener("click", () => showTab(b.dataset.tab));
}
function showTab(name) {
  for (const b of document.querySelectorAll("nav button")) b.classList.toggle("active", b.dataset.tab === name);
  for (const s of document.querySelectorAll("section.tab")) s.hidden = s.id !== name;
  if (name === "sets") { fillSetForm(); refreshJobs(); }
  if (name === "results") refreshResults();
  if (name === "live") { fillEmuForm(); refreshEmulations(); }
}

// ---- library
const open = { kind: null, name: null, etag: null, dirty: false };
let templates = [];

async function refreshLists() {
  for (const kind of ["networks", "workloads", "experiments"]) {
    const r = await api("GET", `/api/files/${kind}`);
    const ul = $(`list-${kind}`);
    ul.replaceChildren();
    for (const f of r.data || []) {
      const li = el("li", { textContent: f.name, onclick: () => openFile(kind, f.name) });
      li.dataset.name = f.name;
      if (open.kind === kind && open.name === f.name) li.classList.add("open");
      ul.append(li);
    }
  }
}

async function loadTemplates() {
  const r = await api("GET", "/api/templates");
  templates = r.data || [];
  const sel = $("new-template");
  for (const t of templates) sel.append(el("option", { value: t.name, textContent: t.name, title: t.summary }));
}

function renderGutter(text, problems) {
  const bad = new Set(problems.filter((p) => p.line).map((p) => p.line));
  const n = text.split("\n").length;
  const g = $("gutter");
  g.replaceChildren();
  for (let i = 1; i <= n; i++) {
    g.append(el("span", { class: bad.has(i) ? "bad" : "", textContent: String(i) }), "\n");
  }
  g.scrollTop = $("editor").scrollTop;
}

function renderProblems(problems) {
  const ul = $("problems");
  ul.replaceChildren();
  if (!problems.length) { ul.append(el("li", { class: "ok", textContent: "✓ no problems" })); return; }
  for (const p of problems) {
    const where = p.line ? `line ${p.line}, column ${p.column}` : p.file;
    const li = el("li", { textContent: `${where}: ${p.key ? "`" + p.key + "`: " : ""}${p.message}` });
    li.dataset.line = p.line || "";
    li.addEventListener("click", () => goToLine(p.line));
    ul.append(li);
  }
  renderGutter($("editor").value, problems);
}

function goToLine(line) {
  if (!line) return;
  const ta = $("editor");
  const lines = ta.value.split("\n");
  const start = lines.slice(0, line - 1).reduce((a, l) => a + l.length + 1, 0);
  ta.focus();
  ta.setSelectionRange(start, start + (lines[line - 1] || "").length);
}

let checkTimer = null;
let checkSeq = 0;
function scheduleCheck() {
  clearTimeout(checkTimer);
  checkTimer = setTimeout(async () => {
    const seq = ++checkSeq;
    const text = $("editor").value;
    const r = await api("POST", "/api/validate", { kind: open.kind, name: open.name, text });
    if (seq !== checkSeq || !r.ok) return;
    renderProblems(r.data.problems);
    renderGutter(text, r.data.problems);
  }, 250);
}

async function openFile(kind, name) {
  const r = await api("GET", `/api/files/${kind}/${encodeURIComponent(name)}`);
  if (!r.ok) { status(r.data.error); return; }
  Object.assign(open, { kind, name, etag: r.data.etag, dirty: false });
  $("editor-title").textContent = `${kind}/${name}.toml`;
  const ta = $("editor");
  ta.disabled = false;
  ta.value = r.data.text;
  $("save").disabled = false;
  $("delete").disabled = false;
  $("editor-state").textContent = "saved";
  $("editor-state").className = "";
  renderGutter(r.data.text, r.data.problems);
  renderProblems(r.data.problems);
  refreshLists();
  $("common-form").hidden = kind !== "networks";
  if (kind === "networks") fillStages(await api("POST", "/api/form", { text: r.data.text, name }));
}

// ---- the form for a network's common keys (POST /api/form)
function fillStages(r) {
  if (!r.ok) return;
  const sel = $("f-stage");
  const was = sel.value;
  sel.replaceChildren(...r.data.stages.map((s) => el("option", { value: s, textContent: s })));
  if (r.data.stages.includes(was)) sel.value = was;
}

$("f-apply").addEventListener("click", async () => {
  const keys = {};
  for (const [id, key] of [["f-rate", "rate"], ["f-delay", "delay"], ["f-jitter", "jitter"], ["f-loss", "loss"],
    ["f-drop", "drop"], ["f-aqm", "aqm"]]) {
    if ($(id).value.trim()) keys[key] = $(id).value.trim();
  }
  if ($("f-queue").value !== "") keys.queue_packets = Number($("f-queue").value);
  const body = { text: $("editor").value, name: open.name, stage: $("f-stage").value, keys };
  if ($("f-state").value.trim()) body.state = { name: $("f-state").value.trim(), at: $("f-at").value.trim() };
  const r = await api("POST", "/api/form", body);
  const m = $("f-message");
  m.className = r.ok ? "" : "bad";
  if (!r.ok) { m.textContent = r.data.error; return; }
  $("editor").value = r.data.text;
  open.dirty = true;
  $("editor-state").textContent = "edited";
  m.textContent = body.state ? `state ${body.state.name} added` : `set on ${body.stage}`;
  renderGutter(r.data.text, r.data.problems);
  renderProblems(r.data.problems);
  fillStages(r);
});

$("editor").addEventListener("input", () => {
  open.dirty = true;
  $("editor-state").textContent = "edited";
  renderGutter($("editor").value, []);
  scheduleCheck();
});
$("editor").addEventListener("scroll", () => { $("gutter").scrollTop = $("editor").scrollTop; });

$("save").addEventListener("click", async () => {
  const r = await api("PUT", `/api/files/${open.kind}/${encodeURIComponent(open.name)}`,
    { text: $("editor").value }, { "If-Match": open.etag });
  if (r.status === 409) {
    $("editor-state").textContent = r.data.error;
    $("editor-state").className = "conflict";
    return;
  }
  if (!r.ok) { status(r.data.error); return; }
  open.etag = r.data.etag;
  open.dirty = false;
  $("editor-state").textContent = "saved";
  $("editor-state").className = "";
  renderProblems(r.data.problems);
});

$("delete").addEventListener("click", async () => {
  if (!confirm(`Delete ${open.kind}/${open.name}.toml?`)) return;
  const r = await api("DELETE", `/api/files/${open.kind}/${encodeURIComponent(open.name)}`, undefined,
    { "If-Match": open.etag });
  if (!r.ok) { status(r.data.error); return; }
  Object.assign(open, { kind: null, name: null, etag: null });
  $("editor").value = ""; $("editor").disabled = true; $("save").disabled = true; $("delete").disabled = true;
  $("editor-title").textContent = "No file open";
  refreshLists();
});

$("new-create").addEventListener("click", async () => {
  const kind = $("new-kind").value;
  const name = $("new-name").value.trim();
  const tname = $("new-template").value;
  let text = "";
  if (tname) {
    const t = await api("GET", `/api/templates/${encodeURIComponent(tname)}`);
    if (!t.ok) { status(t.data.error); return; }
    text = kind === "workloads" ? (t.data.workload || "") : kind === "networks" ? t.data.network : "";
  }
  const r = await api("PUT", `/api/files/${kind}/${encodeURIComponent(name)}`, { text }, { "If-None-Match": "*" });
  if (!r.ok) { status(r.data.error); return; }
  status(`created ${kind}/${name}.toml`);
  await openFile(kind, name);
});

// ---- replication sets and the queue
async function fillSetForm() {
  for (const [kind, id, keep] of [["networks", "set-network", 0], ["workloads", "set-workload", 1]]) {
    const sel = $(id);
    const was = sel.value;
    const r = await api("GET", `/api/files/${kind}`);
    while (sel.options.length > keep) sel.remove(keep);
    for (const f of r.data || []) sel.append(el("option", { value: f.name, textContent: f.name }));
    if ([...sel.options].some((o) => o.value === was)) sel.value = was;
  }
}

$("set-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const body = {
    name: $("set-name").value.trim(),
    network: $("set-network").value,
    replications: Number($("set-reps").value),
    engine: $("set-engine").value,
  };
  if ($("set-workload").value) body.workload = $("set-workload").value;
  if ($("set-seed").value !== "") body.seed = Number($("set-seed").value);
  const m = $("set-message");
  const sweep = parseSweep($("set-sweep").value);
  if (sweep.error) { m.className = "bad"; m.textContent = sweep.error; return; }
  if (Object.keys(sweep.keys).length) body.sweep = sweep.keys;
  const r = await api("POST", "/api/sets", body);
  m.className = r.ok ? "" : "bad";
  m.textContent = r.ok ? `queued as job ${r.data.job.id}; experiments/${body.name}.toml written` : r.data.error;
  refreshJobs();
});

// The sweep box: `key = v1, v2, ...` a line; a value that is a TOML
// number or boolean is sent as one, anything else as a string ("1%",
// "10 Mbit/s"), as `squall run`'s sweep tables take them.
function parseSweep(text) {
  const keys = {};
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line) continue;
    const eq = line.indexOf("=");
    const key = eq < 0 ? "" : line.slice(0, eq).trim();
    const values = eq < 0 ? [] : line.slice(eq + 1).split(",").map((v) => v.trim()).filter((v) => v !== "");
    if (!key || !values.length) return { error: `sweep line ${i + 1}: expected key = value, value, … (got "${line}")` };
    if (key in keys) return { error: `sweep line ${i + 1}: \`${key}\` is swept twice` };
    keys[key] = values.map((v) => (/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(v) ? Number(v) : v === "true" ? true : v === "false" ? false : v));
  }
  return { keys };
}

function seconds(s) {
  if (s === null || s === undefined) return "";
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

async function refreshJobs() {
  const r = await api("GET", "/api/jobs");
  const tbody = $("jobs").tBodies[0];
  tbody.replaceChildren();
  for (const j of r.data || []) {
    const bar = el("progress", { max: Math.max(j.total, 1), value: j.done });
    const cancel = ["queued", "running"].includes(j.state)
      ? el("button", { textContent: "Cancel", onclick: async () => { await api("POST", `/api/jobs/${j.id}/cancel`); refreshJobs(); } })
      : "";
    const state = el("td", { textContent: j.state, title: j.error || "" });
    const tr = el("tr", {}, el("td", { textContent: j.id }), el("td", { textContent: j.name }), state,
      el("td", {}, bar, ` ${j.done}/${j.total}`), el("td", { textContent: seconds(j.elapsed_s) }),
      el("td", { textContent: j.state === "running" ? seconds(j.eta_s) : "" }), el("td", {}, cancel));
    tr.dataset.state = j.state;
    tr.dataset.name = j.name;
    tbody.append(tr);
    if (j.error) tbody.append(el("tr", {}, el("td", { colSpan: 7, class: "error", textContent: j.error })));
  }
}
setInterval(() => { if (!$("sets").hidden) refreshJobs(); }, 1000);

// ---- results
async function refreshResults() {
  const r = await api("GET", "/api/results");
  const ul = $("results-list");
  ul.replaceChildren();
  const beside = $("result-beside");
  const was = beside.value;
  while (beside.options.length > 1) beside.remove(1);
  for (const run of r.data || []) {
    const date = new Date(run.modified_unix * 1000).toLocaleString();
    const li = el("li", { textContent: `${run.name} — ${run.done}/${run.total} runs, ${date}`, onclick: () => showResult(run.name) });
    li.dataset.name = run.name;
    ul.append(li);
    beside.append(el("option", { value: run.name, textContent: run.name }));
  }
  if ([...beside.options].some((o) => o.value === was)) beside.value = was;
}

function fileUrl(name, path, download) {
  return `/api/results/${encodeURIComponent(name)}/files/${path.split("/").map(encodeURIComponent).join("/")}` +
    (download ? "?download=1" : "");
}

// The pieces of one result's view, for either pane.
function resultMeta(d) {
  const sets = d.run.sets.map((s) => `${s.name} (${s.engine}: ${s.scenario}; seeds ${s.seeds.join(", ")})`).join("; ");
  return `experiment ${d.run.experiment}: ${sets}; ${d.run.done}/${d.run.total} runs` +
    `, ${new Date(d.run.modified_unix * 1000).toLocaleString()}${d.run.complete ? "" : " — not complete"}`;
}

function fillTable(t, summary) {
  t.replaceChildren();
  if (!summary) return;
  t.append(el("thead", {}, el("tr", {}, ...summary.columns.map((c) => el("th", { textContent: c })))));
  const body = el("tbody");
  for (const row of summary.rows) {
    body.append(el("tr", {}, ...row.map((v) => el("td", { class: isNaN(Number(v)) || v === "" ? "" : "num", textContent: v }))));
  }
  t.append(body);
}

function fillPlots(div, name, d) {
  div.replaceChildren();
  for (const p of d.plots) {
    const a = el("a", { href: fileUrl(name, p.path), target: "_blank" }, el("img", { src: fileUrl(name, p.path), alt: p.path }));
    div.append(el("figure", {}, a, el("figcaption", { textContent: p.path })));
  }
}

// The report's pages: the experiment's report.html and one page per
// sweep point (runs/*.html: each flow's throughput, time-sequence, delay,
// drops; the queues; TCP's cwnd and RTT), opened in a new tab.
function fillPages(ul, name, d) {
  ul.replaceChildren();
  const pages = d.files.filter((f) => f.path === "report.html" || (f.path.startsWith("runs/") && f.path.endsWith(".html")));
  for (const f of pages) ul.append(el("li", {}, el("a", { href: fileUrl(name, f.path), target: "_blank", textContent: f.path })));
  if (!pages.length) ul.append(el("li", { class: "muted", textContent: "none (squall report writes them when the set is done)" }));
}

const shown = { name: null };

async function showResult(name) {
  const r = await api("GET", `/api/results/${encodeURIComponent(name)}`);
  if (!r.ok) { status(r.data.error); return; }
  const d = r.data;
  shown.name = name;
  $("result-title").textContent = name;
  $("result-meta").textContent = resultMeta(d);
  fillTable($("summary-table"), d.summary);
  fillPlots($("plots"), name, d);
  fillPages($("pages"), name, d);
  const dl = $("downloads");
  dl.replaceChildren();
  for (const f of d.files) {
    dl.append(el("li", {}, el("a", { href: fileUrl(name, f.path, true), textContent: f.path }), ` (${f.size} B)`));
  }
  $("result-beside").disabled = false;
  if ($("result-beside").value) showBeside($("result-beside").value);
  // Every run of the result that kept its events.csv can be replayed.
  const runs = d.files.filter((f) => f.path.endsWith("/events.csv")).map((f) => f.path.slice(0, -"/events.csv".length));
  $("replay-run").replaceChildren(...runs.map((r) => el("option", { value: r, textContent: r })));
  $("replay-start").disabled = !runs.length;
}

// A finished run replayed at a chosen speed in the Live tab's charts
// (GET /api/results/{name}/replay: events.csv turned into watch lines).
$("replay-start").addEventListener("click", () => {
  const name = shown.name;
  const run = $("replay-run").value;
  const speed = Number($("replay-speed").value);
  showTab("live");
  chooseEmulation(`replay:${name}/${run}`);
  live.replay = true;
  $("live-title").textContent = `Replay of results/${name}/${run} at ${speed}×`;
  $("live-meta").textContent = "replaying…";
  message("a replay: the run is over, its actions are off", false);
  watch(null, `/api/results/${encodeURIComponent(name)}/replay?run=${encodeURIComponent(run)}&speed=${speed}`);
});

// A second result beside the first: its summary table, plots and pages.
async function showBeside(name) {
  const pane = $("beside");
  $("result-panes").classList.toggle("two", Boolean(name));
  if (!name) { pane.hidden = true; pane.replaceChildren(); return; }
  const r = await api("GET", `/api/results/${encodeURIComponent(name)}`);
  pane.hidden = false;
  if (!r.ok) { pane.replaceChildren(el("p", { class: "error", textContent: r.data.error })); return; }
  const d = r.data;
  const table = el("table", { class: "summary" });
  fillTable(table, d.summary);
  const plots = el("div", { class: "plots" });
  fillPlots(plots, name, d);
  const pages = el("ul");
  fillPages(pages, name, d);
  pane.replaceChildren(el("h2", { textContent: name }), el("p", { textContent: resultMeta(d) }), el("h3", { textContent: "Summary" }),
    el("div", { class: "scroll" }, table), el("h3", { textContent: "Plots" }), plots, el("h3", { textContent: "Pages per run" }), pages);
  pane.dataset.name = name;
}
$("result-beside").addEventListener("change", () => showBeside($("result-beside").value));

// ---- live view: running emulations, watched through the server's
// Server-Sent Events bridge of their control sockets (squall ctl watch).
const SVG = "http://www.w3.org/2000/svg";
const WINDOW_S = 30;            // seconds of history the chart shows
const COLOURS = ["#0b5cad", "#c2410c", "#15803d", "#7e22ce", "#b91c1c", "#0e7490", "#a16207", "#4b5563"];
const live = { id: null, source: null, info: null, samples: [], switches: [], ended: false };
// What the server may do (GET /api/server): emulation actions need root.
const server = { root: true };

async function fillEmuForm() {
  for (const [kind, id, keep] of [["networks", "emu-network", 0], ["workloads", "emu-workload", 1]]) {
    const sel = $(id);
    const was = sel.value;
    const r = await api("GET", `/api/files/${kind}`);
    while (sel.options.length > keep) sel.remove(keep);
    for (const f of r.data || []) sel.append(el("option", { value: f.name, textContent: f.name }));
    if ([...sel.options].some((o) => o.value === was)) sel.value = was;
  }
}

$("emu-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const body = { name: $("emu-name").value.trim(), network: $("emu-network").value,
    duration_s: Number($("emu-duration").value) };
  if ($("emu-workload").value) body.workload = $("emu-workload").value;
  const r = await api("POST", "/api/emulations", body);
  const m = $("emu-message");
  m.className = r.ok ? "" : "bad";
  m.textContent = r.ok ? `started run ${r.data.id}: results/${r.data.name}` : r.data.error;
  await refreshEmulations();
  if (r.ok) chooseEmulation(r.data.id);
});

function runLabel(run) {
  const l = run.launch;
  const what = run.info ? run.info.scenario : l ? l.network : "";
  return `${run.id} — ${what}`;
}

async function refreshEmulations() {
  const r = await api("GET", "/api/emulations");
  const ul = $("emulations");
  if (!r.ok) { ul.replaceChildren(el("li", { class: "error", textContent: r.data.error })); return; }
  ul.replaceChildren();
  for (const run of r.data) {
    const l = run.launch;
    const state = l && l.state !== "running" ? l.state : run.info ? "running" : run.error ? "not answering" : "starting";
    const li = el("li", { onclick: () => chooseEmulation(run.id) }, runLabel(run), " ",
      el("span", { class: "muted", textContent: `(${state}${l ? ", results/" + l.name : ""})` }));
    li.dataset.id = run.id;
    li.dataset.state = state;
    if (run.id === live.id) li.classList.add("chosen");
    if (run.error) li.append(el("div", { class: "error", textContent: run.error }));
    if (l && l.error) li.append(el("div", { class: "error", textContent: l.error }));
    ul.append(li);
    if (run.id === live.id && run.info && !live.info) showInfo(run.info);
  }
  if (!r.data.length) ul.append(el("li", { class: "muted", textContent: "none running" }));
  // A chosen run that was still starting: watch it once it answers.
  const chosen = r.data.find((run) => run.id === live.id);
  if (chosen && chosen.info && !live.source && !live.ended) watch(chosen.id);
}
setInterval(() => { if (!$("live").hidden) refreshEmulations(); }, 1000);

// The controls that act on the chosen run (squall ctl's actions).
const BLACKOUT_CONTROLS = ["live-blackout-mode", "live-blackout-direction", "live-blackout-on", "live-blackout-off"];
const BACKGROUND_CONTROLS = ["live-generator", "live-bg-start", "live-bg-stop", "live-bg-rate", "live-bg-rate-set"];

function enableControls() {
  const off = live.ended || !live.info || !server.root;
  const states = (live.info && live.info.states) || [];
  const generators = (live.info && live.info.background) || [];
  $("live-state").disabled = off || !states.length;
  $("live-switch").disabled = off || !states.length;
  for (const id of BLACKOUT_CONTROLS) $(id).disabled = off;
  for (const id of BACKGROUND_CONTROLS) $(id).disabled = off || !generators.length;
}

function showInfo(info) {
  live.info = info;
  $("live-title").textContent = `Run ${info.id}: ${info.scenario}`;
  $("live-state").replaceChildren(...(info.states || []).map((s) => el("option", { value: s, textContent: s })));
  $("live-generator").replaceChildren(...(info.background || []).map((g, i) =>
    el("option", { value: i, textContent: `${g.stage}: ${g.generator}` })));
  enableControls();
  if (!server.root) message("the server does not run as root: it can show this run but not change it", true);
  else if (!(info.states || []).length) message("the scenario defines no [[states]] to switch to", false);
}

function message(text, bad) {
  const m = $("live-message");
  m.textContent = text;
  m.className = bad ? "bad" : "";
}

function chooseEmulation(id) {
  if (live.source) live.source.close();
  Object.assign(live, { id, source: null, info: null, samples: [], switches: [], ended: false, deliveries: 0, late: 0,
    replay: false });
  $("live-timing").textContent = "";
  $("live-title").textContent = `Run ${id}`;
  $("live-meta").textContent = "waiting for its control socket…";
  $("live-events").replaceChildren();
  $("live-state").replaceChildren();
  $("live-generator").replaceChildren();
  enableControls();
  message("", false);
  for (const li of $("emulations").children) li.classList.toggle("chosen", Number(li.dataset.id) === id);
  drawChart();
  refreshEmulations();
}

function watch(id, url) {
  const source = new EventSource(url || `/api/emulations/${id}/watch`);
  live.source = source;
  source.onmessage = (ev) => {
    if (live.source !== source) return;
    const line = JSON.parse(ev.data);
    if (line.end !== undefined) {
      source.close();
      live.ended = true;
      $("live-meta").textContent += ` — ended: ${line.end}`;
      enableControls();
      refreshEmulations();
      return;
    }
    onSample(line);
  };
  source.onerror = () => {
    if (live.source !== source || live.ended) return;
    // The stream is gone without its end line (the server or the run):
    // said on the page, not retried for ever.
    source.close();
    live.source = null;
    live.ended = true;
    message("the live stream broke off (is the run or the server gone?)", true);
  };
}

function onSample(line) {
  live.samples.push(line);
  while (live.samples.length && live.samples[0].time < line.time - WINDOW_S) live.samples.shift();
  for (const e of line.events || []) {
    live.switches.push(e);
    $("live-events").append(el("li", { textContent: `${e.time.toFixed(2)} s: ${e.state}` }));
  }
  const flows = (line.flows || []).length;
  $("live-meta").textContent = `time ${line.time.toFixed(1)} s of ${live.info ? live.info.duration : live.replay ? "the run's" : "?"} s` +
    ` — state ${line.state ?? "(the scenario's start)"} — ${flows} flow(s)` +
    (line.dropped_lines ? ` — ${line.dropped_lines} line(s) not shown (slow page)` : "");
  $("live-meta").dataset.state = line.state ?? "";
  const d = line.departure_error;
  if (d) {
    live.deliveries = (live.deliveries || 0) + d.deliveries;
    live.late = (live.late || 0) + d.late;
    $("live-timing").textContent = `last ${(line.interval_s ?? 0).toFixed(1)} s: ${d.deliveries} deliveries, ` +
      `p50 ${d.p50_us.toFixed(0)} µs, p99 ${d.p99_us.toFixed(0)} µs, max ${d.max_us.toFixed(0)} µs; ` +
      `late since watched: ${live.late} of ${live.deliveries}`;
  }
  drawStages(line);
  drawChart();
}

function bits(bps) {
  if (bps === null || bps === undefined) return "";
  return bps >= 1e6 ? `${(bps / 1e6).toFixed(2)} Mbit/s` : `${(bps / 1e3).toFixed(1)} kbit/s`;
}

function dropped(d) {
  if (typeof d === "number") return String(d);
  if (d && typeof d === "object") {
    const parts = Object.entries(d).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`);
    return parts.length ? parts.join(", ") : "0";
  }
  return "";
}

function drawStages(line) {
  const tbody = $("live-stages").tBodies[0];
  tbody.replaceChildren();
  for (const p of line.paths || []) {
    for (const s of p.stages || []) {
      const tr = el("tr", {}, el("td", { textContent: `link ${p.link} ${p.direction}` }), el("td", { textContent: s.name }),
        el("td", { class: "num", textContent: bits(s.rate_bps) }), el("td", { class: "num", textContent: s.packets_inside }),
        el("td", { textContent: (s.classes || []).map((c) => `${c.name} ${c.packets_queued}`).join(", ") }),
        el("td", { class: "num", textContent: s.delivered_packets }), el("td", { textContent: dropped(s.dropped) }));
      tr.dataset.stage = s.name;
      tr.dataset.rate = s.rate_bps ?? "";
      tbody.append(tr);
    }
  }
}

// The series of the three charts, over the last WINDOW_S: each path's
// throughput, its stages' capacity (dashed) and the busiest flows'
// throughput (bit/s); each stage's packets inside and each class's
// queue (packets); the departure-time error's p50 (dashed) and p99 (µs).
function series() {
  const out = { rate: new Map(), queue: new Map(), timing: new Map() };
  const add = (chart, key, label, kind, t, v) => {
    const m = out[chart];
    if (!m.has(key)) m.set(key, { key, label, kind, points: [] });
    if (v !== null && v !== undefined) m.get(key).points.push([t, v]);
  };
  const lastFlows = (live.samples.at(-1)?.flows || []).slice().sort((a, b) => b.bytes - a.bytes).slice(0, 4);
  const shown = new Set(lastFlows.map((f) => f.flow));
  for (const line of live.samples) {
    for (const p of line.paths || []) {
      add("rate", `path-${p.path}`, `link ${p.link} ${p.direction}`, "path", line.time, p.throughput_bps);
      for (const s of p.stages || []) {
        if (s.rate_bps) add("rate", `capacity-${p.path}-${s.name}`, `${s.name} capacity`, "capacity", line.time, s.rate_bps);
        add("queue", `stage-${p.path}-${s.name}`, `${s.name}`, "stage", line.time, s.packets_inside);
        for (const c of s.classes || []) add("queue", `class-${p.path}-${s.name}-${c.name}`, `${s.name} class ${c.name}`, "class", line.time, c.packets_queued);
      }
    }
    for (const f of line.flows || []) if (shown.has(f.flow)) add("rate", `flow-${f.flow}`, `flow ${f.flow}`, "flow", line.time, f.throughput_bps);
    const d = line.departure_error;
    if (d && d.deliveries > 0) {
      add("timing", "p50", "p50", "p50", line.time, d.p50_us);
      add("timing", "p99", "p99", "p99", line.time, d.p99_us);
    }
  }
  return { rate: [...out.rate.values()], queue: [...out.queue.values()], timing: [...out.timing.values()] };
}

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function drawChart() {
  const all = series();
  drawLines("live-chart", "live-legend", all.rate, { H: 280, unit: "Mbit/s", scale: 1e6, digits: 2, label: bits, data: "bps" });
  drawLines("live-queue-chart", "live-queue-legend", all.queue, { H: 200, unit: "packets", scale: 1, digits: 0,
    label: (v) => `${v} packets`, data: "values" });
  drawLines("live-timing-chart", "live-timing-legend", all.timing, { H: 200, unit: "µs", scale: 1, digits: 0,
    label: (v) => `${v.toFixed(0)} µs`, data: "values" });
}

// One chart of `all` series against time, with the state switches marked.
function drawLines(id, legendId, all, o) {
  const chart = $(id);
  chart.replaceChildren();
  const [W, H, left, right, top, bottom] = [820, o.H, 60, 10, 24, 30];
  const t1 = live.samples.length ? live.samples.at(-1).time : WINDOW_S;
  const t0 = Math.max(0, t1 - WINDOW_S);
  const tEnd = Math.max(t1, t0 + 1);
  let ymax = 0;
  for (const s of all) for (const [, v] of s.points) ymax = Math.max(ymax, v);
  ymax = ymax > 0 ? ymax * 1.1 : o.scale;
  const x = (t) => left + (t - t0) / (tEnd - t0) * (W - left - right);
  const y = (v) => H - bottom - v / ymax * (H - top - bottom);
  chart.dataset.points = live.samples.length;
  chart.dataset.tEnd = live.samples.length ? t1 : 0;
  for (let i = 0; i <= 4; i++) {
    const v = ymax * i / 4;
    chart.append(svg("line", { class: "grid", x1: left, x2: W - right, y1: y(v), y2: y(v) }));
    const digits = ymax / o.scale < 10 ? Math.max(o.digits, 1) : o.digits;
    chart.append(svg("text", { x: left - 4, y: y(v) + 4, "text-anchor": "end" }, (v / o.scale).toFixed(digits)));
  }
  chart.append(svg("text", { x: 4, y: 12 }, o.unit));
  for (let t = Math.ceil(t0 / 5) * 5; t <= tEnd; t += 5) {
    chart.append(svg("line", { class: "grid", x1: x(t), x2: x(t), y1: top, y2: H - bottom }));
    chart.append(svg("text", { x: x(t), y: H - bottom + 14, "text-anchor": "middle" }, `${t} s`));
  }
  chart.append(svg("line", { class: "axis", x1: left, x2: W - right, y1: H - bottom, y2: H - bottom }));
  for (const e of live.switches) {
    if (e.time < t0) continue;
    chart.append(svg("line", { class: "switch", x1: x(e.time), x2: x(e.time), y1: top, y2: H - bottom }));
    chart.append(svg("text", { x: x(e.time) + 3, y: top + 10 }, e.state));
  }
  const legend = $(legendId);
  legend.replaceChildren();
  all.forEach((s, i) => {
    const colour = COLOURS[i % COLOURS.length];
    const line = svg("polyline", { class: s.kind, stroke: colour,
      points: s.points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" ") });
    line.dataset.series = s.key;
    line.dataset.times = s.points.map(([t]) => t).join(",");
    line.dataset[o.data] = s.points.map(([, v]) => Math.round(v)).join(",");
    line.append(svg("title", {}, s.label));
    chart.append(line);
    const last = s.points.at(-1);
    const swatch = el("span", { class: "swatch" });
    swatch.style.background = colour; // CSSOM, which the page's CSP allows
    legend.append(el("li", {}, swatch, `${s.label}${last ? ": " + o.label(last[1]) : ""}`));
  });
}

// One action on the chosen run; its answer (with the run's time) or its
// error shown beside the controls.
async function act(path, body, said) {
  const r = await api("POST", `/api/emulations/${live.id}/${path}`, body);
  if (r.ok) message(`${said(r.data)} at ${Number(r.data.time).toFixed(2)} s`, false);
  else message(r.data.error, true);
  $("live-message").dataset.time = r.ok ? r.data.time : "";
  return r;
}

$("live-switch").addEventListener("click", () =>
  act("state", { name: $("live-state").value }, (d) => `entered ${d.entered}`));

for (const on of [true, false]) {
  $(on ? "live-blackout-on" : "live-blackout-off").addEventListener("click", () =>
    act("blackout", { on, mode: $("live-blackout-mode").value, direction: $("live-blackout-direction").value },
      () => `blackout ${on ? "on (" + $("live-blackout-mode").value + ")" : "off"}`));
}

function generator() { return live.info.background[Number($("live-generator").value)]; }
for (const [id, action] of [["live-bg-start", "start"], ["live-bg-stop", "stop"]]) {
  $(id).addEventListener("click", () => {
    const g = generator();
    return act("background", { stage: g.stage, generator: g.generator, action }, () => `${g.generator}: ${action}`);
  });
}
$("live-bg-rate-set").addEventListener("click", () => {
  const g = generator();
  const rate = $("live-bg-rate").value.trim();
  return act("background", { stage: g.stage, generator: g.generator, action: { rate } },
    () => `${g.generator}: rate ${rate}`);
});

async function loadServer() {
  const r = await api("GET", "/api/server");
  if (!r.ok) return;
  server.root = r.data.root;
  if (!server.root) {
    $("emu-start").disabled = true;
    const emu = $("set-engine").querySelector('option[value="emu"]');
    emu.disabled = true;
    emu.textContent += " (needs a server running as root)";
    const m = $("emu-message");
    m.className = "bad";
    m.textContent = "this server does not run as root: it cannot start or change emulations " +
      "(network namespaces and TUN devices need root); start `squall serve` as root for them";
  }
  enableControls();
}

loadServer();
loadTemplates();
refreshLists();
