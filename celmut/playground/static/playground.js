// celmut playground: the page. Plain script, no library: the server does the work (/api/*), this
// file shows it. The whole page state travels in the URL fragment, deflated by the browser's own
// CompressionStream: a fragment is never sent to any server.
"use strict";

const PANES = ["policies", "resources", "cluster", "context", "userInfo", "oldObjects"];
const MAX_BYTES = 3 * 1024 * 1024; // the server's (and the webhook's) request limit
const AUTO_RUN_MS = 700;
const $ = (id) => document.getElementById(id);

let last = null; // the last run that succeeded
let selected = 0; // the object shown
let runSequence = 0;
let autoRun = null;
let compiledYaml = "";

// --- small helpers --------------------------------------------------------------------------------

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function setStatus(text) { $("status").textContent = text; }

function busy(isBusy) { document.body.dataset.busy = isBusy ? "true" : "false"; }

function bump(counter) { document.body.dataset[counter] = String(Number(document.body.dataset[counter] || 0) + 1); }

function pageState() {
  const state = { operation: $("operation").value };
  for (const pane of PANES) state[pane] = $(pane).value;
  return state;
}

function setPageState(state) {
  for (const pane of PANES) $(pane).value = typeof state[pane] === "string" ? state[pane] : "";
  $("operation").value = state.operation || "CREATE";
}

function megabytes(bytes) { return (bytes / (1024 * 1024)).toFixed(1) + " MB"; }

class PageError extends Error {}

async function post(path, body) {
  const text = JSON.stringify(body);
  const size = new Blob([text]).size;
  if (size > MAX_BYTES) {
    throw new PageError(`The page holds ${megabytes(size)}: over the 3 MiB a request may carry (the webhook's limit, ` +
      "the API server's). Nothing was sent; make the panes smaller.");
  }
  const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: text });
  return response;
}

async function answer(response) {
  try { return await response.json(); } catch { return { error: `HTTP ${response.status} ${response.statusText}` }; }
}

// --- tabs -----------------------------------------------------------------------------------------

function activate(tab) {
  const list = tab.closest("[role=tablist]");
  for (const other of list.querySelectorAll("[role=tab]")) {
    const chosen = other === tab;
    other.setAttribute("aria-selected", String(chosen));
    other.tabIndex = chosen ? 0 : -1;
    const panel = other.getAttribute("aria-controls") && $(other.getAttribute("aria-controls"));
    if (panel) panel.hidden = !chosen;
  }
}

function setupTabs(list) {
  list.addEventListener("click", (event) => {
    const tab = event.target.closest("[role=tab]");
    if (tab) activate(tab);
  });
  list.addEventListener("keydown", (event) => {
    const tabs = [...list.querySelectorAll("[role=tab]")];
    const index = tabs.indexOf(document.activeElement);
    if (index < 0) return;
    const moves = { ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: tabs.length - 1 };
    if (!(event.key in moves)) return;
    event.preventDefault();
    const next = tabs[(moves[event.key] + tabs.length) % tabs.length];
    next.focus();
    next.click();
  });
}

// --- problems: located, with a way to the line -------------------------------------------------------

function goTo(pane, line, column) {
  const area = $(pane);
  if (!area) return;
  activate($("tab-" + pane));
  const lines = area.value.split("\n");
  let offset = 0;
  for (let i = 0; i < Math.min(line - 1, lines.length); i++) offset += lines[i].length + 1;
  const lineLength = (lines[line - 1] || "").length;
  offset += Math.min(Math.max(column - 1, 0), lineLength);
  area.focus();
  area.setSelectionRange(offset, offset);
  const lineHeight = parseFloat(getComputedStyle(area).lineHeight) || 18;
  area.scrollTop = Math.max(0, (line - 4) * lineHeight);
}

function where(problem) {
  const parts = [];
  if (problem.pane) parts.push(problem.pane);
  if (problem.line) parts.push(`line ${problem.line}` + (problem.column ? `, column ${problem.column}` : ""));
  if (problem.field) parts.push(problem.field);
  return parts.join(", ");
}

// The CLI's snippet (" | line" and " | ....^") around its caret, so the caret shows in a narrow pane.
function snippetWindow(snippet, before = 36, after = 24) {
  const [text, caret] = snippet.split("\n").map((line) => line.replace(/^ \| /, ""));
  if (caret === undefined) return snippet;
  const column = caret.indexOf("^");
  const start = Math.max(0, column - before);
  const clipped = text.slice(start, column + after);
  const lead = start > 0 ? "…" : "";
  return `${lead}${clipped}${column + after < text.length ? "…" : ""}\n${" ".repeat(lead.length + column - start)}^`;
}

function showProblems(problems) {
  const box = $("problems");
  box.replaceChildren();
  for (const tab of document.querySelectorAll("#inputs [role=tab]")) tab.classList.remove("has-problem");
  for (const problem of problems) {
    const item = el("div", { class: "problem", role: "alert" },
      el("strong", { text: where(problem) || "error" }), el("div", { text: problem.message }));
    if (problem.snippet) item.append(el("pre", { text: snippetWindow(problem.snippet), "aria-label": "where, with a caret" }));
    if (problem.pane && $(problem.pane)) {
      $("tab-" + problem.pane).classList.add("has-problem");
      if (problem.line) {
        item.append(el("button", { type: "button", text: `Go to ${problem.pane} line ${problem.line}`,
          onclick: () => goTo(problem.pane, problem.line, problem.column || 1) }));
      }
    }
    box.append(item);
  }
  $("results").classList.toggle("stale", problems.length > 0 && last !== null);
}

// --- running -------------------------------------------------------------------------------------

async function run() {
  const sequence = ++runSequence;
  busy(true);
  setStatus("Running…");
  let response;
  let data;
  const state = pageState();
  try {
    response = await post("/api/run", state);
    data = await answer(response);
  } catch (error) {
    if (sequence !== runSequence) return;
    showProblems([{ message: error instanceof PageError ? error.message : `The playground did not answer: ${error.message}` }]);
    setStatus("Not run");
    busy(false);
    bump("runs");
    return;
  }
  if (sequence !== runSequence) return; // a newer run is on its way
  busy(false);
  if (!response.ok) {
    showProblems([{ message: data.error || `HTTP ${response.status}` }]);
    setStatus("Not run");
  } else if (data.errors) {
    showProblems(data.errors);
    setStatus(`${data.errors.length} problem${data.errors.length > 1 ? "s" : ""}: nothing ran`);
  } else {
    last = data;
    last.state = state;
    if (selected >= data.objects.length) selected = 0;
    showProblems([]);
    render();
    setStatus(`Ran ${data.objects.length} object${data.objects.length === 1 ? "" : "s"} in ${(data.seconds * 1000).toFixed(0)} ms`);
  }
  bump("runs");
}

function scheduleRun() {
  clearTimeout(autoRun);
  autoRun = setTimeout(run, AUTO_RUN_MS);
}

// --- rendering a run -----------------------------------------------------------------------------

function render() {
  const list = $("objects");
  list.replaceChildren();
  last.objects.forEach((object, index) => {
    const label = object.reference + (object.target ? " (mutateExisting target)" : "") + (object.allowed ? "" : " — denied");
    list.append(el("button", { role: "tab", "aria-selected": String(index === selected), tabindex: index === selected ? "0" : "-1",
      text: label, onclick: () => { selected = index; render(); } }));
  });
  const object = last.objects[selected];
  if (!object) {
    $("verdict").textContent = "No resource: paste one in the Resources pane.";
    $("diff").replaceChildren();
    return;
  }
  renderDiff(object);
  renderOutcomes(object);
  renderResponse(object);
  if (!$("view-native").hidden) loadNative();
  const notes = $("notes");
  notes.replaceChildren();
  if (last.notes.length) notes.append(el("h2", { text: "Notes" }), el("ul", { class: "notes" }, ...last.notes.map((n) => el("li", { text: n }))));
}

function mutationLabel(applied) {
  const mutation = applied.mutation ? applied.mutation.replace(/^(spec\.mutations\[\d+\]).*$/, "$1") : "(whole policy)";
  return `${applied.policy} ${mutation}`;
}

function rowTitle(row, object) {
  const numbers = row.by || row.kept || [];
  const verb = row.by ? "set by" : "written unchanged by";
  return `${verb} ${numbers.map((n) => mutationLabel(object.applied[n])).join(", ")}`;
}

function renderDiff(object) {
  const changed = object.rows.filter((r) => r.tag !== "equal").length;
  const verdict = $("verdict");
  verdict.className = object.allowed ? "" : "denied";
  verdict.textContent = object.allowed
    ? (object.patch.length ? `${object.reference}: ${object.patch.length} patch operation${object.patch.length > 1 ? "s" : ""}, ${changed} line${changed === 1 ? "" : "s"} changed`
      : `${object.reference}: no policy changed it`)
    : `${object.reference} denied: ${object.message}`;
  const table = $("diff");
  table.replaceChildren(el("colgroup", {}, el("col", { class: "no" }), el("col"), el("col", { class: "no" }), el("col"), el("col", { class: "by" })));
  table.append(el("thead", {}, el("tr", {}, el("th", { scope: "col", colspan: "2", text: "before" }), el("th", { scope: "col", colspan: "2", text: "after" }), el("th", { scope: "col", "aria-label": "provenance" }))));
  const body = el("tbody");
  for (const row of object.rows) {
    const left = row.left || {};
    const right = row.right || {};
    const tr = el("tr", { class: row.tag },
      el("td", { class: "no", text: left.no || "" }), el("td", { class: "l", text: left.text || "" }),
      el("td", { class: "no", text: right.no || "" }), el("td", { class: "r", text: right.text || "" }),
      el("td", { class: "by" }));
    if (row.by || row.kept) {
      tr.classList.add(row.by ? "annotated" : "kept", "annotated");
      const title = rowTitle(row, object);
      tr.title = title;
      tr.tabIndex = 0;
      tr.setAttribute("aria-label", `${(right.text || left.text || "").trim()}: ${title}`);
      const show = () => showWhy(row, object, tr);
      tr.addEventListener("mouseenter", show);
      tr.addEventListener("focus", show);
      tr.addEventListener("click", show);
      tr.addEventListener("keydown", (event) => { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); showWhy(row, object, tr, true); } });
    }
    body.append(tr);
  }
  table.append(body);
  const first = body.querySelector("tr:not(.equal)");
  if (first) first.scrollIntoView({ block: "center" });
}

function showWhy(row, object, tr, focusPanel = false) {
  for (const chosen of document.querySelectorAll("#diff tr.chosen")) chosen.classList.remove("chosen");
  tr.classList.add("chosen");
  const pointer = (row.right || row.left).pointer || "/";
  const why = $("why");
  why.replaceChildren(el("h2", { text: pointer }));
  const list = el("ul");
  const numbers = row.by || row.kept || [];
  for (const number of numbers) {
    const applied = object.applied[number];
    const changes = applied.changes.filter((c) => c.path === pointer || pointer.startsWith(c.path + "/") || c.path.startsWith(pointer + "/"));
    const shown = changes.length ? changes.map((c) => `${c.op} ${c.path}`).join(", ") : (row.kept ? `kept ${pointer} (already had the value written)` : "");
    const item = el("li", {}, el("strong", { text: mutationLabel(applied) }), ` (${applied.kind}${applied.binding ? ", binding " + applied.binding : ""}): ${shown}`);
    if (applied.location && applied.location.line) {
      item.append(" ", el("button", { type: "button", text: "Show in policies",
        onclick: () => goTo("policies", applied.location.line, applied.location.column || 1) }));
    }
    list.append(item);
  }
  why.append(list);
  if (focusPanel) {
    const button = why.querySelector("button");
    if (button) button.focus();
  }
}

function renderOutcomes(object) {
  const table = $("outcomes");
  table.replaceChildren(el("thead", {}, el("tr", {}, ...["Policy", "Kind", "Outcome", "Why", "Time", "CEL cost"].map((h) => el("th", { scope: "col", text: h })))));
  const body = el("tbody");
  for (const outcome of object.outcomes) {
    const why = el("td", { text: outcome.summary || (outcome.status === "applied" ? "applied its mutations" : "") });
    if (outcome.location && outcome.location.line) {
      why.append(" ", el("button", { type: "button", text: `Go to line ${outcome.location.line}`,
        onclick: () => goTo("policies", outcome.location.line, outcome.location.column || 1) }));
    }
    body.append(el("tr", {},
      el("td", { text: outcome.policy + (outcome.binding ? ` (binding ${outcome.binding})` : "") + (outcome.reinvoked ? " (reinvoked)" : "") }),
      el("td", { text: outcome.kind }),
      el("td", { class: "status-" + outcome.status, text: outcome.status }),
      why,
      el("td", { class: "num", text: (outcome.seconds * 1000).toFixed(2) + " ms" }),
      el("td", { class: "num", text: String(outcome.cost) })));
  }
  table.append(body);
}

function renderResponse(object) {
  $("patch").textContent = object.patch.length ? JSON.stringify(object.patch, null, 2) : "(no patch: the object is admitted as it came)";
  const warnings = $("warnings");
  warnings.replaceChildren(...(object.warnings.length ? object.warnings.map((w) => el("li", { text: w })) : [el("li", { text: "none" })]));
  const audit = $("audit");
  const entries = Object.entries(object.auditAnnotations);
  audit.replaceChildren(...(entries.length ? entries.map(([k, v]) => el("tr", {}, el("th", { scope: "row", text: k }), el("td", { text: v }))) : [el("tr", {}, el("td", { text: "none" }))]));
}

// The native MAPs are asked for apart (converting a preset's policy takes longer than a run), when
// their tab is shown, for the state of the last run.
let nativeShown = null;

async function loadNative() {
  if (!last || nativeShown === last) return;
  const shownFor = last;
  $("native").replaceChildren(el("p", { class: "hint", text: "Converting…" }));
  let data;
  try {
    data = await answer(await post("/api/native", last.state));
  } catch (error) {
    data = { error: error.message };
  }
  if (shownFor !== last) return; // a newer run: its own request follows
  nativeShown = last;
  if (data.policies) renderNative(data.policies);
  else $("native").replaceChildren(el("p", { class: "error-text", text: data.error || (data.errors || []).map((p) => p.message).join("; ") }));
  bump("natives");
}

function renderNative(policies) {
  const box = $("native");
  box.replaceChildren();
  for (const policy of policies) {
    const section = el("div", { class: "native" }, el("h3", { text: `${policy.kind} ${policy.name}` + (policy.generatedBy ? ` (from ${policy.generatedBy})` : "") }));
    if (policy.native) section.append(el("p", { text: "Already a native MutatingAdmissionPolicy." }));
    else if (policy.refused) section.append(el("p", { class: "refused", text: `Cannot run as a native MutatingAdmissionPolicy: ${policy.refused}` }));
    else section.append(el("pre", { tabindex: "0", text: policy.map }));
    box.append(section);
  }
}

// --- the scratch pad and the preset compiler -----------------------------------------------------

async function evaluate() {
  const object = last && last.objects[selected];
  const body = { state: pageState(), expression: $("expression").value, profile: $("profile").value,
    resource: object && object.resource !== undefined ? object.resource : 0 };
  const out = $("cel-result");
  try {
    const response = await post("/api/eval", body);
    const data = await answer(response);
    if (data.errors) out.textContent = data.errors.map((p) => `${where(p)}: ${p.message}`).join("\n");
    else if (data.error) out.textContent = `${data.kind ? data.kind + " error" : "error"}: ${data.error}` + (data.snippet && !data.error.includes(data.snippet) ? "\n" + data.snippet : "");
    else out.textContent = JSON.stringify(data.result, null, 2);
    out.classList.toggle("error-text", Boolean(data.error || data.errors));
    if (data.variables) {  // each bound variable, one click (or Enter) from its value
      const bound = Object.entries(data.variables).filter(([, given]) => given).map(([name]) => name);
      const buttons = bound.map((name) => el("button", { type: "button", text: name, "aria-label": `Show ${name}`,
        onclick: () => { $("expression").value = name; evaluate(); } }));
      $("bound").replaceChildren(`Bound for ${object ? object.reference : "no object"}: `, ...(buttons.length ? buttons : ["nothing"]));
    }
  } catch (error) {
    out.textContent = error.message;
  }
  bump("evals");
}

async function compilePresets() {
  const out = $("compiled");
  try {
    const response = await post("/api/compile", { policies: $("policies").value });
    const data = await answer(response);
    if (data.errors) { out.textContent = data.errors.map((p) => p.message).join("\n"); compiledYaml = ""; }
    else { out.textContent = `# ${data.count} MutatingPolic${data.count === 1 ? "y" : "ies"}\n` + data.yaml; compiledYaml = data.yaml; }
  } catch (error) {
    out.textContent = error.message;
    compiledYaml = "";
  }
  $("use-compiled").disabled = !compiledYaml;
}

// --- share and export ----------------------------------------------------------------------------

function toBase64Url(bytes) {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64Url(text) {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

async function encodeState(state) {
  const stream = new Blob([JSON.stringify(state)]).stream().pipeThrough(new CompressionStream("deflate-raw"));
  return toBase64Url(new Uint8Array(await new Response(stream).arrayBuffer()));
}

async function decodeState(text) {
  const stream = new Blob([fromBase64Url(text)]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  return JSON.parse(await new Response(stream).text());
}

async function share() {
  const encoded = await encodeState(pageState());
  history.replaceState(null, "", "#s=" + encoded);
  const link = location.href;
  let copied = false;
  try { await navigator.clipboard.writeText(link); copied = true; } catch { copied = false; }
  setStatus(copied ? `Link copied (${link.length} characters; the state is in the fragment, never sent)` : `The link is in the address bar (${link.length} characters)`);
  bump("shares");
}

async function loadFragment() {
  const match = location.hash.match(/^#s=([A-Za-z0-9_-]+)$/);
  if (!match) return false;
  try {
    setPageState(await decodeState(match[1]));
    return true;
  } catch (error) {
    showProblems([{ message: `This link's state cannot be read (${error.message}); the page starts empty.` }]);
    return false;
  }
}

async function exportTest() {
  try {
    const response = await post("/api/export", { state: pageState(), name: "playground" });
    if (!response.ok) {
      const data = await answer(response);
      showProblems(data.errors || [{ message: data.error || `HTTP ${response.status}` }]);
      setStatus("Not exported");
      return;
    }
    const blob = await response.blob();
    const link = el("a", { href: URL.createObjectURL(blob), download: "kyverno-test.zip" });
    document.body.append(link);
    link.click();
    link.remove();
    setStatus(`Exported kyverno-test.zip: ${response.headers.get("x-files").split(",").length} files (celmut test DIR, kyverno test DIR)`);
  } catch (error) {
    showProblems([{ message: error.message }]);
  } finally {
    bump("exports");
  }
}

// --- examples and start --------------------------------------------------------------------------

let examples = [];

async function loadExamples() {
  try {
    const response = await fetch("/api/examples");
    examples = (await response.json()).examples;
  } catch { examples = []; }
  const select = $("example");
  for (const example of examples) select.append(el("option", { value: example.id, text: example.title }));
  if (!examples.length) select.append(el("option", { value: "", disabled: "", text: "(no examples: run from a checkout, or --examples DIR)" }));
}

function chooseExample() {
  const example = examples.find((e) => e.id === $("example").value);
  if (!example) return;
  setPageState(example.state);
  selected = 0;
  activate($("tab-policies"));
  run();
}

function start() {
  for (const list of document.querySelectorAll("[role=tablist]:not(#objects)")) setupTabs(list);
  setupTabs($("objects"));
  $("run").addEventListener("click", run);
  $("share").addEventListener("click", share);
  $("export").addEventListener("click", exportTest);
  $("evaluate").addEventListener("click", evaluate);
  $("compile").addEventListener("click", compilePresets);
  $("use-compiled").addEventListener("click", () => { $("policies").value = compiledYaml; activate($("tab-policies")); run(); });
  $("example").addEventListener("change", chooseExample);
  $("tab-native").addEventListener("click", loadNative);
  $("operation").addEventListener("change", scheduleRun);
  for (const pane of PANES) $(pane).addEventListener("input", scheduleRun);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      if (document.activeElement === $("expression")) evaluate(); else { clearTimeout(autoRun); run(); }
    }
  });
  window.addEventListener("hashchange", async () => { if (await loadFragment()) run(); });
  Promise.all([loadExamples(), loadFragment()]).then(([, fromLink]) => {
    if (fromLink) run();
    document.body.dataset.ready = "true";
  });
}

document.addEventListener("DOMContentLoaded", start);
