// The playground's editor: CodeMirror 6 with YAML, CEL inside the expression fields, the server's
// diagnostics at their line and column (gutter mark, underline, hover text) and CEL completion.
// Bundled by esbuild into celmut/playground/static/editor.js (see build.mjs); the page's own script
// (playground.js) uses it through `window.CelmutEditor`.
import { autocompletion, closeBrackets, closeBracketsKeymap, completionKeymap, startCompletion } from "@codemirror/autocomplete";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { yaml } from "@codemirror/lang-yaml";
import {
  bracketMatching, foldGutter, foldKeymap, HighlightStyle, indentOnInput, syntaxHighlighting,
} from "@codemirror/language";
import { lintGutter, lintKeymap, setDiagnostics } from "@codemirror/lint";
import { highlightSelectionMatches, searchKeymap } from "@codemirror/search";
import { Compartment, EditorSelection, EditorState, Prec } from "@codemirror/state";
import {
  drawSelection, EditorView, highlightActiveLine, highlightActiveLineGutter, keymap, lineNumbers, placeholder,
} from "@codemirror/view";
import { tags } from "@lezer/highlight";
import { celCompletion } from "./cel-complete.js";
import { celHighlighting, celRanges, tokenize } from "./cel-syntax.js";

// Colours come from the page's CSS variables, so the editor follows its light and dark schemes.
const highlight = HighlightStyle.define([
  { tag: tags.propertyName, class: "cm-yaml-key" },
  { tag: [tags.string, tags.special(tags.string), tags.content], class: "cm-yaml-string" },
  { tag: [tags.number, tags.bool, tags.null, tags.keyword], class: "cm-yaml-literal" },
  { tag: [tags.comment, tags.lineComment], class: "cm-yaml-comment" },
  { tag: [tags.meta, tags.labelName, tags.typeName, tags.processingInstruction], class: "cm-yaml-meta" },
  { tag: [tags.separator, tags.punctuation, tags.squareBracket, tags.brace], class: "cm-yaml-punctuation" },
]);

const theme = EditorView.theme({
  "&": { height: "100%", fontSize: "13px", backgroundColor: "var(--panel)", color: "var(--ink)" },
  ".cm-scroller": { fontFamily: "var(--mono)", lineHeight: "1.45" },
  ".cm-content": { caretColor: "var(--ink)" },
  ".cm-gutters": { backgroundColor: "var(--gutter)", color: "var(--muted)", borderRight: "1px solid var(--line)" },
  ".cm-activeLine": { backgroundColor: "var(--active-line)" },
  ".cm-activeLineGutter": { backgroundColor: "var(--active-line)" },
  "&.cm-focused .cm-cursor": { borderLeftColor: "var(--ink)" },
  "&.cm-focused": { outline: "3px solid var(--focus)", outlineOffset: "-3px" },
  ".cm-tooltip": { backgroundColor: "var(--panel)", color: "var(--ink)", border: "1px solid var(--line)" },
});

// The page's Content-Security-Policy allows the <style> elements CodeMirror writes with this nonce only.
const styleNonce = (document.querySelector('meta[name="style-nonce"]') || {}).content || "";

function commonExtensions(label, onChange, run) {
  return [
    EditorView.cspNonce.of(styleNonce),
    lineNumbers(),
    highlightActiveLineGutter(),
    history(),
    drawSelection(),
    indentOnInput(),
    bracketMatching(),
    highlightActiveLine(),
    highlightSelectionMatches(),
    syntaxHighlighting(highlight),
    lintGutter(),
    theme,
    EditorView.contentAttributes.of({ "aria-label": label }),
    // Ctrl+Enter (Cmd+Enter) runs, before CodeMirror's own binding of it
    Prec.highest(keymap.of([{ key: "Mod-Enter", run: () => { run(); return true; } }])),
    keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...searchKeymap, ...historyKeymap, ...foldKeymap,
      ...completionKeymap, ...lintKeymap]),
    EditorView.updateListener.of((update) => { if (update.docChanged) onChange(update); }),
  ];
}

const wrapping = new Compartment();

/** A YAML editor in `parent`: options.doc, label, placeholder, onChange(update), run(), cel (the
 *  completion options of cel-complete.js; absent: no CEL in this pane), wrap (long lines wrap). */
export function yamlEditor(parent, options) {
  const extensions = [
    ...commonExtensions(options.label, options.onChange || (() => {}), options.run || (() => {})),
    foldGutter(),
    yaml(),
    wrapping.of(options.wrap ? EditorView.lineWrapping : []),
  ];
  if (options.placeholder) extensions.push(placeholder(options.placeholder));
  if (options.cel) {
    extensions.push(celHighlighting(), closeBrackets(),
      autocompletion({ override: [celCompletion(options.cel)], activateOnTyping: true }));
  }
  const view = new EditorView({ state: EditorState.create({ doc: options.doc || "", extensions }), parent });
  parent.cmView = view;
  return view;
}

/** A CEL editor (the scratch pad): the whole document is one expression. */
export function celEditor(parent, options) {
  const extensions = [
    ...commonExtensions(options.label, options.onChange || (() => {}), options.run || (() => {})),
    celHighlighting({ whole: true }),
    closeBrackets(),
    EditorView.lineWrapping,
    autocompletion({ override: [celCompletion({ ...options.cel, whole: true })], activateOnTyping: true }),
  ];
  const view = new EditorView({ state: EditorState.create({ doc: options.doc || "", extensions }), parent });
  parent.cmView = view;
  return view;
}

export function getText(view) {
  return view.state.doc.toString();
}

/** Replace the whole text (a new example, a restored session): one undoable change, not typing. */
export function setText(view, text) {
  if (getText(view) === text) return;
  view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text }, userEvent: "set" });
}

/** Add text at the end, as a new YAML document when the pane has some already (a dropped file). */
export function appendDocument(view, text) {
  const current = getText(view);
  if (current.trim() === "") {
    view.dispatch({ changes: { from: 0, to: current.length, insert: text }, userEvent: "input.drop" });
    return;
  }
  const separator = (current.endsWith("\n") ? "" : "\n") + "---\n";
  view.dispatch({ changes: { from: current.length, insert: separator + text }, userEvent: "input.drop" });
}

function position(doc, line, column) {
  const number = Math.min(Math.max(line || 1, 1), doc.lines);
  const text = doc.line(number);
  return text.from + Math.min(Math.max((column || 1) - 1, 0), text.length);
}

/** Show problems ({line, column, message, severity: error|warning|info}) at their place: a gutter
 *  mark, the token underlined, the message on hover. A problem without a line marks line 1. */
export function setProblems(view, problems) {
  const doc = view.state.doc;
  const diagnostics = problems.map((problem) => {
    const from = position(doc, problem.line, problem.column);
    const line = doc.lineAt(from);
    const word = /^[A-Za-z0-9_.\-]+|^\S/.exec(line.text.slice(from - line.from));
    let to = from + (word ? word[0].length : 0);
    let start = from;
    if (to === start) {  // at the end of a line: the last character before it
      if (start > line.from) start -= 1; else to = Math.min(line.to, start + 1);
    }
    return { from: start, to: Math.max(to, start), severity: problem.severity || "error", message: problem.message,
      source: problem.source || "celmut" };
  });
  view.dispatch(setDiagnostics(view.state, diagnostics));
}

/** Put the caret at a 1-based line and column, scrolled into the middle, and focus the editor. */
export function goTo(view, line, column) {
  const at = position(view.state.doc, line, column);
  view.dispatch({ selection: EditorSelection.cursor(at), effects: EditorView.scrollIntoView(at, { y: "center" }) });
  view.focus();
}

export function setWrap(view, wrap) {
  view.dispatch({ effects: wrapping.reconfigure(wrap ? EditorView.lineWrapping : []) });
}

export { celRanges, startCompletion, tokenize };
