// CEL inside YAML: where the expressions are (the values of `expression`, `valueExpression` and
// `messageExpression` keys, found in the YAML syntax tree) and their tokens, for highlighting and
// completion. A tokenizer, not a parser: the server's CEL front end is the one that judges.
import { syntaxTree } from "@codemirror/language";
import { Decoration, ViewPlugin } from "@codemirror/view";

export const CEL_KEYS = new Set(["expression", "valueExpression", "messageExpression"]);
export const ROOT_VARIABLES = new Set([
  "object", "oldObject", "request", "namespaceObject", "params", "variables", "authorizer", "exceptions",
]);
const KEYWORDS = new Set(["true", "false", "null", "in"]);

// One regular expression, sticky: each alternative a token class (whitespace first, `other` last).
const TOKEN = new RegExp([
  String.raw`(\s+)`,
  String.raw`(\/\/[^\n]*)`,
  String.raw`((?:[rR][bB]?|[bB][rR]?)?(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?))`,
  String.raw`(0[xX][0-9a-fA-F]+[uU]?|\d+\.\d+(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+[uU]?)`,
  String.raw`([A-Za-z_][A-Za-z0-9_]*)`,
  String.raw`(&&|\|\||==|!=|<=|>=|[-+*/%<>!?:])`,
  String.raw`([()[\]{}.,])`,
  String.raw`(.)`,
].join("|"), "y");
const CLASSES = [null, null, "comment", "string", "number", "identifier", "operator", "punctuation", "other"];

/** The tokens of CEL `text`: {from, to, type} with type keyword, variable, function, method, field,
 *  identifier, string, number, comment, operator, punctuation. */
export function tokenize(text) {
  const tokens = [];
  TOKEN.lastIndex = 0;
  let previous = null;
  let match;
  while (TOKEN.lastIndex < text.length && (match = TOKEN.exec(text)) !== null) {
    const group = match.findIndex((part, index) => index > 0 && part !== undefined);
    const type = CLASSES[group];
    if (!type) continue;
    const token = { from: match.index, to: TOKEN.lastIndex, type };
    if (type === "identifier") {
      const word = match[0];
      const rest = text.slice(token.to);
      const called = /^\s*\(/.test(rest);
      const selected = previous && previous.type === "punctuation" && text[previous.from] === ".";
      if (KEYWORDS.has(word)) token.type = "keyword";
      else if (selected) token.type = called ? "method" : "field";
      else if (called) token.type = "function";
      else if (ROOT_VARIABLES.has(word)) token.type = "variable";
    }
    tokens.push(token);
    previous = token;
  }
  return tokens;
}

/** The CEL expressions of a YAML document state between `from` and `to`: [{from, to}] ranges of the
 *  expression's text (a block scalar's content, a quoted scalar without its quotes, a plain scalar). */
export function celRanges(state, from = 0, to = state.doc.length) {
  const ranges = [];
  syntaxTree(state).iterate({
    from,
    to,
    enter(node) {
      if (node.name !== "Pair") return;
      const key = node.node.getChild("Key");
      if (!key || !CEL_KEYS.has(state.sliceDoc(key.from, key.to).replace(/^["']|["']$/g, ""))) return;
      let value = key.nextSibling;
      while (value && value.name === ":") value = value.nextSibling;
      if (!value) return;
      if (value.name === "BlockLiteral") {
        const content = value.getChild("BlockLiteralContent");
        if (content) ranges.push({ from: content.from, to: content.to });
      } else if (value.name === "QuotedLiteral") {
        if (value.to - value.from >= 2) ranges.push({ from: value.from + 1, to: value.to - 1 });
      } else if (value.name === "Literal") {
        ranges.push({ from: value.from, to: value.to });
      }
    },
  });
  return ranges;
}

const marks = {};
function mark(type) {
  return marks[type] || (marks[type] = Decoration.mark({ class: `cm-cel-${type}` }));
}
const REGION = Decoration.mark({ class: "cm-cel" });

function decorations(view, whole) {
  const found = [];
  for (const { from, to } of view.visibleRanges) {
    const regions = whole ? [{ from: 0, to: view.state.doc.length }] : celRanges(view.state, from, to);
    for (const region of regions) {
      if (region.to <= region.from) continue;
      if (!whole) found.push(REGION.range(region.from, region.to));
      const text = view.state.sliceDoc(region.from, region.to);
      for (const token of tokenize(text)) {
        if (token.type === "punctuation" || token.type === "identifier") continue;
        found.push(mark(token.type).range(region.from + token.from, region.from + token.to));
      }
    }
  }
  return Decoration.set(found, true);
}

/** Highlights CEL: inside the expression fields of YAML, or (whole) the whole document. */
export function celHighlighting({ whole = false } = {}) {
  return ViewPlugin.fromClass(class {
    constructor(view) { this.decorations = decorations(view, whole); }
    update(update) {
      if (update.docChanged || update.viewportChanged || syntaxTree(update.startState) !== syntaxTree(update.state)) {
        this.decorations = decorations(update.view, whole);
      }
    }
  }, { decorations: (plugin) => plugin.decorations });
}
