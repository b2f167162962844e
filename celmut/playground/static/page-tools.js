// celmut playground: the tools beside a run. The native MAPs, the CEL scratch pad, the preset
// compiler, the link that holds the whole page (in the URL fragment, deflated by the browser's own
// CompressionStream: a fragment is never sent to any server), the Kyverno test export, and the
// connected cluster (read-only).
"use strict";

let compiledYaml = "";
let connection = null; // GET /api/cluster

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
  const object = shownObject();
  const expression = CelmutEditor.getText(editors.expression);
  const body = { state: pageState(), expression, profile: $("profile").value,
    resource: object && object.resource !== undefined ? object.resource : 0 };
  const out = $("cel-result");
  try {
    const data = await answer(await post("/api/eval", body));
    if (data.errors) out.textContent = data.errors.map((p) => `${where(p)}: ${p.message}`).join("\n");
    else if (data.error) out.textContent = `${data.kind ? data.kind + " error" : "error"}: ${data.error}` + (data.snippet && !data.error.includes(data.snippet) ? "\n" + data.snippet : "");
    else out.textContent = JSON.stringify(data.result, null, 2);
    out.classList.toggle("error-text", Boolean(data.error || data.errors));
    CelmutEditor.setProblems(editors.expression, data.kind === "compile" && data.line ? [{ line: data.line, column: data.column, message: data.error }] : []);
    if (data.variables) {  // each bound variable, one click (or Enter) from its value
      const bound = Object.entries(data.variables).filter(([, given]) => given).map(([name]) => name);
      const buttons = bound.map((name) => el("button", { type: "button", text: name, "aria-label": `Show ${name}`,
        onclick: () => { CelmutEditor.setText(editors.expression, name); evaluate(); } }));
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
    const data = await answer(await post("/api/compile", { policies: paneText("policies") }));
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
    const files = response.headers.get("x-files").split(",").map((f) => f.replace(/^[^/]*\//, ""));
    setStatus(`Exported kyverno-test.zip: ${files.join(", ")} (celmut test DIR, kyverno test DIR)`);
  } catch (error) {
    showProblems([{ message: error.message }]);
  } finally {
    bump("exports");
  }
}

// --- the connected cluster (read-only) ---------------------------------------------------------------

async function cluster(path) {
  const response = await fetch(path);
  const data = await answer(response);
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

async function loadConnection() {
  try { connection = await cluster("/api/cluster"); } catch { connection = { connected: false }; }
  const badge = $("connection");
  if (!connection.connected) return;
  badge.hidden = false;
  badge.textContent = `Connected to ${connection.context} (read-only)`;
  badge.title = `${connection.server}: the page lists and reads its objects; nothing is written to it`;
  document.body.dataset.connected = connection.context;
  try {
    const { namespaces } = await cluster("/api/cluster/namespaces");
    $("live-namespace").replaceChildren(...namespaces.map((n) => el("option", { value: n, text: n })));
    if (namespaces.includes("default")) $("live-namespace").value = "default";
    await listLive();
  } catch (error) {
    setStatus(`The cluster did not answer: ${error.message}`);
  }
}

async function listLive() {
  const namespace = $("live-namespace").value;
  const resource = $("live-resource").value;
  const select = $("live-name");
  try {
    const { names, kind } = await cluster(`/api/cluster/objects?namespace=${encodeURIComponent(namespace)}&resource=${encodeURIComponent(resource)}`);
    select.replaceChildren(el("option", { value: "", text: names.length ? `all ${names.length} ${kind}s` : `(no ${kind} here)` }),
      ...names.map((n) => el("option", { value: n, text: n })));
  } catch (error) {
    select.replaceChildren(el("option", { value: "", text: error.message }));
  }
  bump("listings");
}

async function loadLive() {
  const params = new URLSearchParams({ namespace: $("live-namespace").value, resource: $("live-resource").value, name: $("live-name").value });
  try {
    const found = await cluster(`/api/cluster/load?${params}`);
    const edited = editedPanes(["resources"]);
    if (edited.length && !(await confirmReplace(edited))) return;
    setPaneText("resources", found.yaml);
    pristine = pageState();
    restoring = false;
    scheduleSave();
    const more = found.total > found.count ? ` (the first ${found.count} of ${found.total}: a run takes at most that many)` : "";
    setStatus(`Loaded ${found.count} object${found.count === 1 ? "" : "s"} from ${connection.context}${more}`);
    runNow();
  } catch (error) {
    showProblems([{ message: `Loading from the cluster: ${error.message}` }]);
  }
  bump("loads");
}
