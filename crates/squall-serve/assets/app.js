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
}

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
  const r = await api("POST", "/api/sets", body);
  const m = $("set-message");
  m.className = r.ok ? "" : "bad";
  m.textContent = r.ok ? `queued as job ${r.data.job.id}; experiments/${body.name}.toml written` : r.data.error;
  refreshJobs();
});

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
  for (const run of r.data || []) {
    const date = new Date(run.modified_unix * 1000).toLocaleString();
    const li = el("li", { textContent: `${run.name} — ${run.done}/${run.total} runs, ${date}`, onclick: () => showResult(run.name) });
    li.dataset.name = run.name;
    ul.append(li);
  }
}

function fileUrl(name, path, download) {
  return `/api/results/${encodeURIComponent(name)}/files/${path.split("/").map(encodeURIComponent).join("/")}` +
    (download ? "?download=1" : "");
}

async function showResult(name) {
  const r = await api("GET", `/api/results/${encodeURIComponent(name)}`);
  if (!r.ok) { status(r.data.error); return; }
  const d = r.data;
  $("result-title").textContent = name;
  const sets = d.run.sets.map((s) => `${s.name} (${s.engine}: ${s.scenario}; seeds ${s.seeds.join(", ")})`).join("; ");
  $("result-meta").textContent = `experiment ${d.run.experiment}: ${sets}; ${d.run.done}/${d.run.total} runs` +
    `, ${new Date(d.run.modified_unix * 1000).toLocaleString()}${d.run.complete ? "" : " — not complete"}`;
  const t = $("summary-table");
  t.replaceChildren();
  if (d.summary) {
    t.append(el("thead", {}, el("tr", {}, ...d.summary.columns.map((c) => el("th", { textContent: c })))));
    const body = el("tbody");
    for (const row of d.summary.rows) {
      body.append(el("tr", {}, ...row.map((v) => el("td", { class: isNaN(Number(v)) || v === "" ? "" : "num", textContent: v }))));
    }
    t.append(body);
  }
  const plots = $("plots");
  plots.replaceChildren();
  for (const p of d.plots) {
    const a = el("a", { href: fileUrl(name, p.path), target: "_blank" }, el("img", { src: fileUrl(name, p.path), alt: p.path }));
    plots.append(el("figure", {}, a, el("figcaption", { textContent: p.path })));
  }
  const dl = $("downloads");
  dl.replaceChildren();
  for (const f of d.files) {
    dl.append(el("li", {}, el("a", { href: fileUrl(name, f.path, true), textContent: f.path }), ` (${f.size} B)`));
  }
}

loadTemplates();
refreshLists();
