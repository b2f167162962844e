// celmut playground, the page's core: the editors (CodeMirror, from editor.js), the page state, tabs,
// problems at their line and column, the session kept in this browser, files dropped or added, and
// the catalog of examples, policies and presets. The server does the work (/api/*); these scripts
// show it. page-results.js renders a run, page-tools.js holds the tools beside it, playground.js starts.
"use strict";

const PANES = ["policies", "resources", "cluster", "context", "userInfo", "oldObjects"];
const PANE_NAMES = { policies: "Policies", resources: "Resources", cluster: "Cluster", context: "Context",
  userInfo: "UserInfo", oldObjects: "Old objects" };
const MAX_BYTES = 3 * 1024 * 1024; // the server's (and the webhook's) request limit
const SESSION_KEY = "celmut-playground-session";
const $ = (id) => document.getElementById(id);

const editors = {}; // pane (and "expression") -> CodeMirror view
let celEnvironment = null; // GET /api/cel: what completion offers in CEL
let pristine = null; // the panes as last loaded (an example, a link, a restored session)
let restoring = true; // no autosave until the person changes something

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

function setStatus(text) { $("status").textContent = text; $("status").title = text; }

function bump(counter) { document.body.dataset[counter] = String(Number(document.body.dataset[counter] || 0) + 1); }

function megabytes(bytes) { return (bytes / (1024 * 1024)).toFixed(1) + " MB"; }

// --- the editors -------------------------------------------------------------------------------

function paneText(pane) { return CelmutEditor.getText(editors[pane]); }

function setPaneText(pane, text) { CelmutEditor.setText(editors[pane], text); }

function pageState() {
  const state = { operation: $("operation").value };
  for (const pane of PANES) state[pane] = paneText(pane);
  return state;
}

function setPageState(state, { asLoaded = true } = {}) {
  for (const pane of PANES) setPaneText(pane, typeof state[pane] === "string" ? state[pane] : "");
  $("operation").value = state.operation || "CREATE";
  if (asLoaded) pristine = pageState();
}

// The fields of a kind at a path, from the server's OpenAPI and CRD schemas (cached per page).
const fieldCache = new Map();
async function fieldsAt(target, path) {
  const key = JSON.stringify([target, path]);
  if (!fieldCache.has(key)) {
    fieldCache.set(key, post("/api/fields", { target, path, cluster: paneText("cluster") })
      .then((r) => r.json()).then((d) => (d.fields ? d : { type: "", fields: [] })).catch(() => ({ type: "", fields: [] })));
  }
  return fieldCache.get(key);
}

// The kind of the object shown, else of the first resource: what `object` is where a policy names none.
function shownTarget() {
  const text = paneText("resources");
  const apiVersion = /^apiVersion:\s*["']?([^\s"']+)/m.exec(text);
  const kind = /^kind:\s*["']?([^\s"']+)/m.exec(text);
  return apiVersion && kind ? { apiVersion: apiVersion[1], kind: kind[1] } : null;
}

function createEditors() {
  const cel = { environment: () => celEnvironment, fields: fieldsAt, defaultTarget: shownTarget };
  for (const pane of PANES) {
    const parent = $(pane);
    CelmutEditor.yamlEditor(parent, {
      label: parent.dataset.label, placeholder: parent.dataset.placeholder,
      onChange: (update) => paneChanged(pane, update),
      run: () => runNow(),
      cel: pane === "policies" ? cel : undefined,
      wrap: narrow.matches,
    });
    editors[pane] = parent.cmView;
    parent.addEventListener("dragover", (event) => { event.preventDefault(); parent.classList.add("dropping"); });
    parent.addEventListener("dragleave", () => parent.classList.remove("dropping"));
    parent.addEventListener("drop", (event) => dropFiles(event, pane), true);
  }
  const expression = $("expression");
  CelmutEditor.celEditor(expression, {
    doc: "object.metadata.name", label: expression.dataset.label,
    run: () => evaluate(),
    cel: { ...cel, profile: () => $("profile").value,
      variables: () => [] },
  });
  editors.expression = expression.cmView;
}

function paneChanged(pane, update) {
  const typed = update.transactions.some((t) => t.isUserEvent("input") || t.isUserEvent("delete") || t.isUserEvent("undo") || t.isUserEvent("redo"));
  if (pane === "cluster") fieldCache.clear();
  if (typed) { restoring = false; hideRestore(); }
  scheduleRun();
  scheduleSave();
}

// --- files dropped on a pane, or added -----------------------------------------------------------

async function readFiles(files) {
  const texts = [];
  for (const file of files) texts.push({ name: file.name, text: await file.text() });
  return texts;
}

async function addFiles(pane, files) {
  const texts = await readFiles(files);
  for (const { text } of texts) CelmutEditor.appendDocument(editors[pane], text.endsWith("\n") ? text : text + "\n");
  restoring = false;
  hideRestore();
  setStatus(`Added ${texts.map((t) => t.name).join(", ")} to the ${PANE_NAMES[pane]} pane`);
  bump("files");
}

function dropFiles(event, pane) {
  $(pane).classList.remove("dropping");
  if (!event.dataTransfer || !event.dataTransfer.files.length) return;
  event.preventDefault();
  event.stopPropagation();
  activate($("tab-" + pane));
  addFiles(pane, [...event.dataTransfer.files]);
}

function shownPane() {
  return PANES.find((pane) => !$("pane-" + pane).hidden) || "policies";
}

// --- the session kept in this browser (localStorage) -----------------------------------------------

let saveTimer = null;
function scheduleSave() {
  if (restoring) return;
  clearTimeout(saveTimer);
  saveTimer = setTimeout(saveSession, 400);
}

function saveSession() {
  const state = pageState();
  try {
    localStorage.setItem(SESSION_KEY, JSON.stringify({ state, savedAt: new Date().toISOString() }));
    document.body.dataset.saved = String(Date.now());
  } catch (error) {
    setStatus(`This session is not kept in the browser (${error.name}): the panes are too large`);
  }
}

function savedSession() {
  try {
    const saved = JSON.parse(localStorage.getItem(SESSION_KEY) || "null");
    return saved && saved.state && typeof saved.state === "object" ? saved : null;
  } catch { return null; }
}

function offerRestore() {
  const saved = savedSession();
  if (!saved || PANES.every((pane) => !saved.state[pane])) return;
  const when = new Date(saved.savedAt);
  const count = PANES.filter((pane) => saved.state[pane]).map((pane) => PANE_NAMES[pane]).join(", ");
  $("restore-text").textContent = `Your last session (${count}) was saved in this browser at ${when.toLocaleString()}.`;
  $("restore").hidden = false;
}

function hideRestore() { $("restore").hidden = true; }

function restoreSession() {
  const saved = savedSession();
  hideRestore();
  if (!saved) return;
  setPageState(saved.state);
  restoring = false;
  runNow();
}

// --- tabs ---------------------------------------------------------------------------------------

function activate(tab) {
  const list = tab.closest("[role=tablist]");
  for (const other of list.querySelectorAll("[role=tab]")) {
    const chosen = other === tab;
    other.setAttribute("aria-selected", String(chosen));
    other.tabIndex = chosen ? 0 : -1;
    const panel = other.getAttribute("aria-controls") && $(other.getAttribute("aria-controls"));
    if (panel) panel.hidden = !chosen;
  }
  if (list.closest("#inputs")) {
    const pane = tab.id.replace(/^tab-/, "");
    $("live").hidden = !(connection && connection.connected && pane === "resources");
    if (editors[pane]) editors[pane].requestMeasure();
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

// --- problems: located, marked in their pane, with a way to the line -----------------------------------

function goTo(pane, line, column) {
  if (!editors[pane]) return;
  activate($("tab-" + pane));
  CelmutEditor.goTo(editors[pane], line, column);
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
  const byPane = Object.fromEntries(PANES.map((pane) => [pane, []]));
  for (const problem of problems) {
    const item = el("div", { class: "problem", role: "alert" },
      el("strong", { text: where(problem) || "error" }), el("div", { text: problem.message }));
    if (problem.snippet) item.append(el("pre", { text: snippetWindow(problem.snippet), "aria-label": "where, with a caret" }));
    if (problem.pane && editors[problem.pane]) {
      $("tab-" + problem.pane).classList.add("has-problem");
      byPane[problem.pane].push(problem);
      if (problem.line) {
        item.append(el("button", { type: "button", text: `Go to ${problem.pane} line ${problem.line}`,
          onclick: () => goTo(problem.pane, problem.line, problem.column || 1) }));
      }
    }
    box.append(item);
  }
  for (const pane of PANES) CelmutEditor.setProblems(editors[pane], byPane[pane]);
  $("results").classList.toggle("stale", problems.length > 0 && last !== null);
}

// --- requests ---------------------------------------------------------------------------------------

class PageError extends Error {}

function sizeProblem(body) {
  const text = JSON.stringify(body);
  const size = new Blob([text]).size;
  if (size <= MAX_BYTES) return null;
  const state = body.state || body;
  const panes = PANES.filter((pane) => typeof state[pane] === "string")
    .map((pane) => [pane, new Blob([state[pane]]).size]).sort((a, b) => b[1] - a[1]);
  const [largest, bytes] = panes.length ? panes[0] : ["page", size];
  const what = largest === "page" ? "The page" : `The ${PANE_NAMES[largest]} pane`;
  return `${what} holds ${megabytes(bytes)} (the request ${megabytes(size)}): over the 3 MiB a request may carry ` +
    "(the webhook's limit, the API server's). Nothing was sent; make it smaller.";
}

async function post(path, body) {
  const problem = sizeProblem(body);
  if (problem) throw new PageError(problem);
  return fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
}

async function answer(response) {
  try { return await response.json(); } catch { return { error: `HTTP ${response.status} ${response.statusText}` }; }
}

// --- the catalog: examples, policies and presets ---------------------------------------------------

let catalog = [];

async function loadCatalog() {
  try {
    catalog = (await (await fetch("/api/catalog")).json()).entries;
  } catch { catalog = []; }
  renderCatalog("");
}

function renderCatalog(query) {
  const list = $("catalog-list");
  list.replaceChildren();
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  const found = catalog.filter((entry) => {
    const text = `${entry.group} ${entry.title} ${entry.description}`.toLowerCase();
    return words.every((word) => text.includes(word));
  });
  if (!catalog.length) list.append(el("p", { class: "hint", text: "Nothing here: run the playground from a checkout, or give --examples DIR" }));
  else if (!found.length) list.append(el("p", { class: "hint", text: "Nothing matches." }));
  let group = "";
  for (const entry of found) {
    if (entry.group !== group) {
      group = entry.group;
      list.append(el("h3", { text: group }));
    }
    list.append(el("button", { type: "button", role: "listitem", class: "entry", "data-entry": entry.id,
      onclick: () => chooseEntry(entry) },
      el("span", { class: "title", text: entry.title }), el("span", { class: "description", text: entry.description || "" })));
  }
}

function openCatalog() {
  $("catalog-search").value = "";
  renderCatalog("");
  $("catalog").showModal();
  $("catalog-search").focus();
}

// What an entry would replace that the person has changed since it was loaded (empty panes do not count).
function editedPanes(replaced) {
  const state = pageState();
  return replaced.filter((pane) => state[pane].trim() && (!pristine || state[pane] !== pristine[pane]));
}

function confirmReplace(panes) {
  return new Promise((resolve) => {
    const dialog = $("confirm-replace");
    $("confirm-replace-text").textContent = `The ${panes.map((p) => PANE_NAMES[p]).join(", ")} pane${panes.length > 1 ? "s" : ""} ` +
      "changed since they were loaded. What is in them now would be lost (it is not in the browser's history).";
    const done = (answerYes) => { dialog.close(); resolve(answerYes); };
    $("confirm-replace-yes").onclick = () => done(true);
    $("confirm-replace-no").onclick = () => done(false);
    dialog.oncancel = () => resolve(false);
    dialog.showModal();
  });
}

async function chooseEntry(entry) {
  $("catalog").close();
  const replaced = entry.id.startsWith("example:") ? PANES : ["policies"];
  const edited = editedPanes(replaced);
  if (edited.length && !(await confirmReplace(edited))) {
    setStatus("Nothing replaced");
    return;
  }
  hideRestore();
  restoring = false;
  if (entry.id.startsWith("example:")) setPageState(entry.state);
  else { setPaneText("policies", entry.state.policies); pristine = pageState(); }
  selectedView = { kind: "object", index: 0 };
  activate($("tab-policies"));
  scheduleSave();
  runNow();
}
