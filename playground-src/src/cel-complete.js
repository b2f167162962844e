// Completion inside CEL: the variables in scope, `variables.<name>` of the policy being edited, the
// fields of the resource it matches (from the server's OpenAPI and CRD schemas), and every function of
// celmut's CEL environment with its signatures (from the server, which reads the environment's
// declarations). Nothing here lists a function or a field by hand.
import { celRanges, ROOT_VARIABLES } from "./cel-syntax.js";
import { documentAt, itemsAt, valueAt } from "./yaml-tree.js";

const KEYWORDS = ["true", "false", "null", "in"];
// CEL receiver types as a schema's JSON types (a field of unknown type gets every method).
const RECEIVERS = {
  string: ["string"], integer: ["int"], number: ["double"], boolean: ["bool"],
  array: ["list"], object: ["map"], map: ["map"],
};

/** The chain of selections before a `.` ending at `end` in `text`: ["object", "spec", "[]"], or null
 *  when it does not start at a name (a literal, a call). */
export function chainBefore(text, end) {
  const steps = [];
  let at = end;
  const skipSpace = () => { while (at > 0 && /\s/.test(text[at - 1])) at--; };
  for (;;) {
    skipSpace();
    if (text[at - 1] === "]") {  // an index: [0], ["key"], [?"key"]
      let depth = 0;
      let open = at - 1;
      for (; open >= 0; open--) {
        if (text[open] === "]") depth++;
        else if (text[open] === "[" && --depth === 0) break;
      }
      if (open < 0) return null;
      steps.unshift("[]");
      at = open;
      continue;
    }
    const word = /[A-Za-z_][A-Za-z0-9_]*$/.exec(text.slice(0, at));
    if (!word) return null;
    steps.unshift(word[0]);
    at -= word[0].length;
    skipSpace();
    if (text[at - 1] === "?" && text[at - 2] === ".") at -= 2;
    else if (text[at - 1] === ".") at -= 1;
    else break;
    if (/[\d]/.test(text[at - 1] || "")) return null;  // 1.5 is a number, not a selection
  }
  // steps[0] must be a name on its own, not a selection of something we did not follow (a call's result)
  if (at > 0 && /[)\]"']/.test(text[at - 1])) return null;
  return steps.map((step, index) => (index > 0 && /^\d/.test(step) ? "[]" : step));
}

function signatureList(fn) {
  return fn.overloads.map((o) => o.signature).join("\n");
}

function functionOptions(env, { member, prefix = "" }) {
  const out = [];
  for (const fn of env.functions) {
    if (fn.member !== member) continue;
    if (prefix) {
      if (!fn.name.startsWith(prefix)) continue;
      const rest = fn.name.slice(prefix.length);
      if (rest.includes(".")) continue;
      out.push({ label: rest, type: "function", detail: fn.overloads[0].signature, info: signatureList(fn) });
    } else {
      out.push({ label: fn.name, type: member ? "method" : "function", detail: fn.overloads[0].signature,
        info: signatureList(fn), receivers: fn.overloads.map((o) => o.receiver) });
    }
  }
  return out;
}

function methodsFor(env, type) {
  const wanted = RECEIVERS[type];
  const methods = functionOptions(env, { member: true });
  const macros = env.macros.filter((m) => m.member).map((m) => ({ label: m.name, type: "keyword", detail: "macro", info: m.info }));
  if (!wanted) return [...methods, ...macros];
  const fits = (receiver) => receiver === "dyn" || wanted.includes(receiver);
  const kept = methods.filter((m) => m.receivers.some(fits));
  return wanted.includes("list") || wanted.includes("map") ? [...kept, ...macros] : kept;
}

/** What a policy document says about its expressions' scope. */
export function policyScope(state, pos) {
  const root = documentAt(state, pos);
  if (!root) return { kind: "", variables: [], rule: null, paramKind: null };
  const rules = itemsAt(state, root, ["spec", "matchConstraints", "resourceRules"]);
  const first = rules[0];
  const rule = first ? {
    group: valueAt(state, first, ["apiGroups", 0]) ?? "",
    version: valueAt(state, first, ["apiVersions", 0]) ?? "",
    resource: valueAt(state, first, ["resources", 0]) ?? "",
  } : null;
  const paramKind = valueAt(state, root, ["spec", "paramKind", "kind"]) ? {
    apiVersion: valueAt(state, root, ["spec", "paramKind", "apiVersion"]) ?? "",
    kind: valueAt(state, root, ["spec", "paramKind", "kind"]),
  } : null;
  const variables = itemsAt(state, root, ["spec", "variables"])
    .map((item) => ({ name: valueAt(state, item, ["name"]), expression: valueAt(state, item, ["expression"]) ?? "" }))
    .filter((v) => typeof v.name === "string" && v.name);
  return { kind: valueAt(state, root, ["kind"]) ?? "", variables, rule, paramKind };
}

/**
 * A CodeMirror completion source for CEL.
 * options.environment(): the server's environments ({profiles: {kyverno, kubernetes}, request, userInfo}) or null
 * options.fields(target, path): a promise of {type, fields: [{name, type, description}]} (the schema at path)
 * options.profile(state, pos): "kyverno" or "kubernetes" (the scratch pad's choice); default: from the document
 * options.whole: the whole document is one expression (the scratch pad), else only the YAML expression fields
 * options.defaultTarget(): {apiVersion, kind} of the object the page shows, for a policy matching no named resource
 */
export function celCompletion(options) {
  return async (context) => {
    const { state, pos } = context;
    let region = null;
    if (options.whole) region = { from: 0, to: state.doc.length };
    else region = celRanges(state, Math.max(0, pos - 1), pos).find((r) => r.from <= pos && pos <= r.to) || null;
    if (!region) return null;
    const environment = options.environment();
    if (!environment) return null;
    const scope = options.whole ? { kind: "", variables: options.variables ? options.variables() : [], rule: null, paramKind: null }
      : policyScope(state, pos);
    const profileName = options.profile ? options.profile(state, pos)
      : scope.kind === "MutatingAdmissionPolicy" ? "kubernetes" : "kyverno";
    const env = environment.profiles[profileName];
    const text = state.sliceDoc(region.from, pos);
    const word = /[A-Za-z_][A-Za-z0-9_]*$/.exec(text);
    const start = pos - (word ? word[0].length : 0);
    let before = text.slice(0, text.length - (word ? word[0].length : 0));
    if (!word && !context.explicit && !/\.\??$/.test(before)) return null;
    const dot = /\??\.\s*$/.exec(before) || /\.\s*$/.exec(before);
    if (!dot) {
      if (/["'\d]$/.test(before)) return null;  // inside a literal
      const variables = env.variables.map((v) => ({ label: v.name, type: "variable", detail: v.type, boost: 2 }));
      const globals = functionOptions(env, { member: false });
      const macros = env.macros.filter((m) => !m.member).map((m) => ({ label: m.name, type: "keyword", detail: "macro", info: m.info }));
      const keywords = KEYWORDS.map((k) => ({ label: k, type: "keyword" }));
      return { from: start, options: [...variables, ...globals, ...macros, ...keywords], validFor: /^[A-Za-z_][A-Za-z0-9_]*$/ };
    }
    const chain = chainBefore(before, before.length - dot[0].length);
    if (!chain) {
      return { from: start, options: methodsFor(env, null), validFor: /^[A-Za-z_][A-Za-z0-9_]*$/ };
    }
    const [head, ...path] = chain;
    let options_ = [];
    if (head === "variables" && path.length === 0) {
      options_ = scope.variables.map((v) => ({ label: v.name, type: "variable", detail: "variable", info: v.expression, boost: 3 }));
    } else if (ROOT_VARIABLES.has(head) || env.variables.some((v) => v.name === head)) {
      const named = scope.rule && scope.rule.resource && !scope.rule.resource.includes("*") ? scope.rule : null;
      const objectTarget = named || (options.defaultTarget ? options.defaultTarget() : null);
      const targets = { object: objectTarget, oldObject: objectTarget, params: scope.paramKind,
        namespaceObject: { apiVersion: "v1", kind: "Namespace" } };
      let found = null;
      if (head === "request" && path.length === 0) {
        options_ = Object.entries(environment.request).map(([name, t]) => ({ label: name, type: "property", detail: t, boost: 3 }));
      } else if (head === "request" && path.length === 1 && environment.requestParts[path[0]]) {
        options_ = Object.entries(environment.requestParts[path[0]]).map(([name, t]) => ({ label: name, type: "property", detail: t, boost: 3 }));
      } else if (head === "request" && (path[0] === "object" || path[0] === "oldObject") && objectTarget) {
        found = await options.fields(objectTarget, path.slice(1));
      } else if (targets[head]) {
        found = await options.fields(targets[head], path);
      }
      if (found) {
        options_ = found.fields.map((f) => ({ label: f.name, type: "property", detail: f.type, info: f.description, boost: 3 }));
      }
      options_ = [...options_, ...methodsFor(env, found ? found.type : null)];
    } else {
      const prefix = chain.join(".") + ".";
      const namespaced = functionOptions(env, { member: false, prefix });
      options_ = namespaced.length ? namespaced : methodsFor(env, null);
    }
    return { from: start, options: options_, validFor: /^[A-Za-z_][A-Za-z0-9_]*$/ };
  };
}
