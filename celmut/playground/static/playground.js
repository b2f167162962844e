// celmut playground: start the page. The editors first, then what the server offers (the catalog,
// the CEL environment, the cluster it is connected to), then the state: a shared link, else the
// offer to restore the last session kept in this browser.
"use strict";

function start() {
  createEditors();
  for (const list of document.querySelectorAll("[role=tablist]:not(#objects)")) setupTabs(list);
  setupTabs($("objects"));
  $("run").addEventListener("click", runNow);
  $("share").addEventListener("click", share);
  $("export").addEventListener("click", exportTest);
  $("evaluate").addEventListener("click", evaluate);
  $("compile").addEventListener("click", compilePresets);
  $("use-compiled").addEventListener("click", () => { setPaneText("policies", compiledYaml); activate($("tab-policies")); runNow(); });
  $("example").addEventListener("click", openCatalog);
  $("catalog-search").addEventListener("input", (event) => renderCatalog(event.target.value));
  $("catalog-search").addEventListener("keydown", (event) => {
    if (event.key === "ArrowDown") { event.preventDefault(); const first = $("catalog-list").querySelector("button"); if (first) first.focus(); }
  });
  $("catalog-list").addEventListener("keydown", (event) => {
    const buttons = [...$("catalog-list").querySelectorAll("button")];
    const index = buttons.indexOf(document.activeElement);
    if (index < 0 || !["ArrowDown", "ArrowUp"].includes(event.key)) return;
    event.preventDefault();
    const next = index + (event.key === "ArrowDown" ? 1 : -1);
    if (next < 0) $("catalog-search").focus(); else if (buttons[next]) buttons[next].focus();
  });
  $("restore-yes").addEventListener("click", restoreSession);
  $("restore-no").addEventListener("click", () => { hideRestore(); localStorage.removeItem(SESSION_KEY); });
  $("upload").addEventListener("change", async (event) => {
    const files = [...event.target.files];
    if (files.length) await addFiles(shownPane(), files);
    event.target.value = "";
  });
  $("tab-native").addEventListener("click", loadNative);
  $("tab-pods").addEventListener("click", renderPods);
  $("operation").addEventListener("change", () => { scheduleRun(); scheduleSave(); });
  $("live-namespace").addEventListener("change", listLive);
  $("live-resource").addEventListener("change", listLive);
  $("live-load").addEventListener("click", loadLive);
  narrow.addEventListener("change", () => {
    for (const pane of PANES) CelmutEditor.setWrap(editors[pane], narrow.matches);
    if (last) render();
  });
  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented) return; // an editor ran it already
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      if ($("expression").contains(document.activeElement)) evaluate(); else runNow();
    }
  });
  window.addEventListener("hashchange", async () => { if (await loadFragment()) runNow(); });
  const environment = fetch("/api/cel").then((r) => r.json()).then((data) => { celEnvironment = data; }).catch(() => {});
  Promise.all([loadCatalog(), loadConnection(), environment, loadFragment()]).then(([, , , fromLink]) => {
    if (fromLink) { restoring = false; runNow(); } else offerRestore();
    performance.mark("celmut-ready"); // how long the page took to be usable (benchmarks/playground_bench.py)
    document.body.dataset.ready = "true";
  });
}

document.addEventListener("DOMContentLoaded", start);
