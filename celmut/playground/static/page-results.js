// celmut playground: a run and what it shows. The objects (and a workload's pods) as chips, the diff
// side by side (unified below 800 px) with who wrote each line, every policy's outcome, the response.
"use strict";

const AUTO_RUN_MS = 700;
const narrow = window.matchMedia("(max-width: 800px)");

let last = null; // the last run that succeeded
let selectedView = { kind: "object", index: 0 }; // the object shown, or a pod of the workload run
let workload = null; // the last workload run as its pods (for the object it was made from)
let runSequence = 0;
let autoRun = null;

function busy(isBusy) { document.body.dataset.busy = isBusy ? "true" : "false"; }

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
    failed([{ message: error instanceof PageError ? error.message : `The playground did not answer: ${error.message}` }], "Not run");
    return;
  }
  if (sequence !== runSequence) return; // a newer run is on its way
  if (!response.ok) {
    failed([{ message: data.error || `HTTP ${response.status}` }], "Not run");
  } else if (data.errors) {
    failed(data.errors, `${data.errors.length} problem${data.errors.length > 1 ? "s" : ""}: nothing ran`);
  } else {
    last = data;
    last.state = state;
    workload = null;
    renderPods();
    if (selectedView.kind !== "object" || selectedView.index >= data.objects.length) selectedView = { kind: "object", index: 0 };
    showProblems([]);
    render();
    setStatus(`Ran ${data.objects.length} object${data.objects.length === 1 ? "" : "s"} in ${(data.seconds * 1000).toFixed(0)} ms`);
  }
  busy(false);
  bump("runs");
}

// A run that did not happen: its problems shown, and nothing of the last run presented as current.
function failed(problems, status) {
  showProblems(problems);
  clearWhy();
  setStatus(status);
  busy(false);
  bump("runs");
}

function runNow() {
  clearTimeout(autoRun);
  run();
}

function scheduleRun() {
  clearTimeout(autoRun);
  autoRun = setTimeout(run, AUTO_RUN_MS);
}

function shownObject() {
  if (!last) return null;
  if (selectedView.kind === "pod" && workload) return workload.pods[selectedView.index] || null;
  return last.objects[selectedView.index] || null;
}

function chip(label, selected, onclick) {
  return el("button", { role: "tab", "aria-selected": String(selected), tabindex: selected ? "0" : "-1", text: label, onclick });
}

function render() {
  const list = $("objects");
  list.replaceChildren();
  last.objects.forEach((object, index) => {
    const label = object.reference + (object.target ? " (mutateExisting target)" : "") + (object.allowed ? "" : " — denied");
    const chosen = selectedView.kind === "object" && index === selectedView.index;
    list.append(chip(label, chosen, () => show({ kind: "object", index })));
  });
  if (selectedView.kind === "pod" && workload) {
    const pod = workload.pods[selectedView.index];
    list.append(chip(`${pod.reference} (pod ${selectedView.index + 1} of ${workload.pods.length})`, true, () => {}));
  }
  const object = shownObject();
  clearWhy();
  if (!object) {
    $("verdict").textContent = "No resource: paste one in the Resources pane.";
    $("diff").replaceChildren();
    $("run-pods").hidden = true;
    return;
  }
  renderDiff(object);
  renderOutcomes(object);
  renderResponse(object);
  renderPodsOffer(selectedView.kind === "object" ? object : null);
  if (!$("view-native").hidden) loadNative();
  const notes = $("notes");
  notes.replaceChildren();
  if (last.notes.length) notes.append(el("h2", { text: "Notes" }), el("ul", { class: "notes" }, ...last.notes.map((n) => el("li", { text: n }))));
}

function show(view) {
  selectedView = view;
  render();
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

function verdictText(object) {
  const changed = object.rows.filter((r) => r.tag !== "equal").length;
  if (!object.allowed) return `${object.reference} denied: ${object.message}`;
  if (!object.patch.length) return `${object.reference}: no policy changed it`;
  const operations = `${object.patch.length} patch operation${object.patch.length > 1 ? "s" : ""}`;
  return `${object.reference}: ${operations}, ${changed} line${changed === 1 ? "" : "s"} changed`;
}

// The diff's rows: side by side (before | after), or unified (one column, - and +) on a narrow screen.
function diffRows(object) {
  if (!narrow.matches) {
    return object.rows.map((row) => ({ row, cells: [
      ["no", (row.left || {}).no], ["l text", (row.left || {}).text], ["no", (row.right || {}).no], ["r text", (row.right || {}).text],
    ] }));
  }
  const out = [];
  for (const row of object.rows) {
    const sign = { equal: "  ", insert: "+ ", delete: "- " };
    if (row.tag === "replace" && row.left && row.right) {
      out.push({ row: { ...row, tag: "delete", by: undefined }, cells: [["no", row.left.no], ["l text", "- " + row.left.text]] });
      out.push({ row: { ...row, tag: "insert" }, cells: [["no", row.right.no], ["r text", "+ " + row.right.text]] });
    } else {
      const side = row.right || row.left;
      out.push({ row, cells: [["no", side.no], [row.right ? "r text" : "l text", (sign[row.tag] || "  ") + side.text]] });
    }
  }
  return out;
}

function renderDiff(object) {
  const verdict = $("verdict");
  verdict.className = object.allowed ? "" : "denied";
  verdict.textContent = verdictText(object);
  const table = $("diff");
  const unified = narrow.matches;
  table.className = unified ? "unified" : "split";
  const columns = unified ? ["no", "", "by"] : ["no", "", "no", "", "by"];
  table.replaceChildren(el("colgroup", {}, ...columns.map((c) => el("col", c ? { class: c } : {}))));
  const head = unified
    ? [el("th", { scope: "col", colspan: "2", text: "before → after" })]
    : [el("th", { scope: "col", colspan: "2", text: "before" }), el("th", { scope: "col", colspan: "2", text: "after" })];
  table.append(el("thead", {}, el("tr", {}, ...head, el("th", { scope: "col", "aria-label": "provenance" }))));
  const body = el("tbody");
  for (const { row, cells } of diffRows(object)) {
    const tr = el("tr", { class: row.tag }, ...cells.map(([cls, text]) => el("td", { class: cls, text: text === undefined ? "" : String(text) })),
      el("td", { class: "by" }));
    if (row.by || row.kept) {
      tr.classList.add(row.by ? "annotated" : "kept", "annotated");
      const title = rowTitle(row, object);
      tr.title = title;
      tr.tabIndex = 0;
      tr.setAttribute("aria-label", `${((row.right || row.left).text || "").trim()}: ${title}`);
      const showIt = () => showWhy(row, object, tr);
      tr.addEventListener("mouseenter", showIt);
      tr.addEventListener("focus", showIt);
      tr.addEventListener("click", showIt);
      tr.addEventListener("keydown", (event) => { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); showWhy(row, object, tr, true); } });
    }
    body.append(tr);
  }
  table.append(body);
  // The first change in view inside the diff's own box (never the page: it would move under the reader).
  const first = body.querySelector("tr:not(.equal)");
  const wrap = table.parentElement;
  if (first) wrap.scrollTop = Math.max(0, first.offsetTop - wrap.clientHeight / 3);
}

function clearWhy() {
  for (const chosen of document.querySelectorAll("#diff tr.chosen")) chosen.classList.remove("chosen");
  $("why").replaceChildren(el("p", { class: "hint", text: "Hover or focus a marked line (Tab, then Enter) to see which policy and mutation set it." }));
}

function showWhy(row, object, tr, focusPanel = false) {
  for (const chosen of document.querySelectorAll("#diff tr.chosen")) chosen.classList.remove("chosen");
  tr.classList.add("chosen");
  const pointer = (row.right || row.left).pointer || "/";
  const why = $("why");
  why.replaceChildren(el("h2", { text: pointer }));
  const list = el("ul");
  for (const number of row.by || row.kept || []) {
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
  let patch;
  if (!object.allowed) patch = `(denied: no patch, the API server refuses the request)\n\n${object.message}`;
  else if (object.patch.length) patch = JSON.stringify(object.patch, null, 2);
  else patch = "(no patch: the object is admitted as it came)";
  $("patch").textContent = patch;
  $("patch").classList.toggle("error-text", !object.allowed);
  const warnings = $("warnings");
  warnings.replaceChildren(...(object.warnings.length ? object.warnings.map((w) => el("li", { text: w })) : [el("li", { text: "none" })]));
  const audit = $("audit");
  const entries = Object.entries(object.auditAnnotations);
  audit.replaceChildren(...(entries.length ? entries.map(([k, v]) => el("tr", {}, el("th", { scope: "row", text: k }), el("td", { text: v }))) : [el("tr", {}, el("td", { text: "none" }))]));
}

// --- a workload run as its pods -----------------------------------------------------------------------

function renderPodsOffer(object) {
  const button = $("run-pods");
  const offered = object && object.workload && !object.target;
  button.hidden = !offered;
  if (offered) {
    const n = object.workload.replicas;
    button.textContent = `Run as its ${n} pod${n === 1 ? "" : "s"}`;
    button.onclick = () => runPods(object.resource);
  }
}

async function runPods(index) {
  setStatus("Making the pods and admitting them…");
  busy(true);
  let data;
  try {
    data = await answer(await post("/api/workload", { state: last.state, resource: index }));
  } catch (error) {
    data = { error: error.message };
  }
  busy(false);
  if (data.errors || data.error) {
    showProblems(data.errors || [{ message: data.error }]);
    setStatus("Not run as pods");
  } else {
    workload = data;
    renderPods();
    activate($("tab-pods"));
    setStatus(`${data.workload}: ${data.summary} (${(data.seconds * 1000).toFixed(0)} ms)`);
  }
  bump("workloads");
}

function renderPods() {
  $("pods-hint").hidden = Boolean(workload);
  if (!workload) { // a new run: the pods of the last one are not shown as this one's
    $("pods-summary").textContent = "";
    $("pods").replaceChildren();
    $("pods-notes").replaceChildren();
    return;
  }
  const owners = workload.owners.length ? ` (through ${workload.owners.join(", ")})` : "";
  $("pods-summary").textContent = `${workload.workload}${owners}: ${workload.summary}`;
  const table = $("pods");
  table.replaceChildren(el("thead", {}, el("tr", {}, ...["#", "Pod", "Placed", "What decided it"].map((h) => el("th", { scope: "col", text: h })))));
  const body = el("tbody");
  workload.pods.forEach((pod, index) => {
    const decided = pod.decisions.find((d) => d.placement || d.group);
    const placed = !pod.allowed ? "denied" : decided ? (decided.placement || decided.group) : (pod.patch.length ? "changed" : "unchanged");
    const rule = !pod.allowed ? pod.message : decided ? `${decided.policy}: ${decided.rule}` : pod.outcomes.filter((o) => o.status === "applied").map((o) => o.policy).join(", ") || "no policy changed it";
    const name = el("button", { type: "button", class: "link", text: pod.name, title: "Show this pod's diff",
      onclick: () => { show({ kind: "pod", index }); activate($("tab-diff")); } });
    body.append(el("tr", { class: "placed-" + placed }, el("td", { class: "num", text: String(index + 1) }), el("td", {}, name),
      el("td", { class: "placed", text: placed }), el("td", { class: "rule", text: rule })));
  });
  table.append(body);
  const notes = $("pods-notes");
  notes.replaceChildren(...(workload.notes.length ? [el("ul", { class: "notes" }, ...workload.notes.map((n) => el("li", { text: n })))] : []));
}
