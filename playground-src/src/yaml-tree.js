// Reading a YAML document's values from CodeMirror's YAML syntax tree: what completion needs to know
// about the policy being edited (its kind, its variables, the resources it matches, its paramKind).
import { syntaxTree } from "@codemirror/language";

const MAPPINGS = new Set(["BlockMapping", "FlowMapping"]);
const SEQUENCES = new Set(["BlockSequence", "FlowSequence"]);

function unwrap(node) {
  // Tagged and anchored values, and the Item of a sequence, hold the value itself.
  while (node && (node.name === "Item" || node.name === "Tagged" || node.name === "Anchored")) {
    let child = node.lastChild;
    while (child && (child.name === "Tag" || child.name === "Anchor" || child.name === "-")) child = child.prevSibling;
    node = child;
  }
  return node;
}

function scalar(state, node) {
  if (!node) return undefined;
  const text = state.sliceDoc(node.from, node.to);
  if (node.name === "QuotedLiteral") {
    return text.startsWith("'") ? text.slice(1, -1).replace(/''/g, "'") : JSON.parse(text.replace(/\n\s*/g, " "));
  }
  if (node.name === "Literal") return text.trim();
  if (node.name === "BlockLiteral") {
    const content = node.getChild("BlockLiteralContent");
    return content ? state.sliceDoc(content.from, content.to).replace(/^\s+/gm, "") : "";
  }
  return undefined;
}

function child(state, node, step) {
  node = unwrap(node);
  if (!node) return null;
  if (typeof step === "number") {
    if (!SEQUENCES.has(node.name)) return null;
    const items = node.getChildren("Item");
    return items[step] ? unwrap(items[step]) : null;
  }
  if (!MAPPINGS.has(node.name)) return null;
  for (const pair of node.getChildren("Pair")) {
    const key = pair.getChild("Key");
    if (key && scalar(state, unwrap(key.firstChild) || key) === step) {
      let value = key.nextSibling;
      while (value && value.name === ":") value = value.nextSibling;
      return unwrap(value);
    }
  }
  return null;
}

/** The root node of the YAML document at `pos` (null when there is none). */
export function documentAt(state, pos) {
  let node = syntaxTree(state).resolveInner(pos, -1);
  while (node && node.name !== "Document") node = node.parent;
  if (!node) {  // between documents, or a tree still being parsed: the last document before pos
    syntaxTree(state).iterate({ to: pos, enter(n) { if (n.name === "Document") node = n.node; return n.name === "Stream"; } });
  }
  if (!node) return null;
  let root = node.firstChild;
  while (root && (root.name === "DirectiveEnd" || root.name === "Comment" || root.name === "Directive")) root = root.nextSibling;
  return root;
}

/** The scalar at `path` (keys and indices) below `root`, or undefined. */
export function valueAt(state, root, path) {
  let node = root;
  for (const step of path) {
    node = child(state, node, step);
    if (!node) return undefined;
  }
  return scalar(state, unwrap(node));
}

/** The items of the sequence at `path` below `root` ([] when there is none), each as a node. */
export function itemsAt(state, root, path) {
  let node = root;
  for (const step of path) {
    node = child(state, node, step);
    if (!node) return [];
  }
  node = unwrap(node);
  return node && SEQUENCES.has(node.name) ? node.getChildren("Item").map(unwrap) : [];
}
