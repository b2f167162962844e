// Builds celmut/playground/static/editor.js from src/ with esbuild: one minified file, no source map,
// no CDN, the same bytes for the same sources. Its first line records the SHA-256 of every file it
// is built from (this script, package.json, package-lock.json, src/*), which a test compares with
// the sources in the repository (tests/playground/test_editor_bundle.py).
//   node build.mjs [OUTFILE]   (make playground-editor runs it after npm ci)
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const outfile = process.argv[2] || join(here, "..", "celmut", "playground", "static", "editor.js");

export function sourcesHash() {
  const files = ["build.mjs", "package.json", "package-lock.json",
    ...readdirSync(join(here, "src")).filter((f) => f.endsWith(".js")).sort().map((f) => `src/${f}`)];
  const hash = createHash("sha256");
  for (const file of files) {
    hash.update(file + "\0");
    hash.update(readFileSync(join(here, file)));
    hash.update("\0");
  }
  return hash.digest("hex");
}

const result = await esbuild.build({
  entryPoints: [join(here, "src", "editor.js")],
  bundle: true,
  format: "iife",
  globalName: "CelmutEditor",
  minify: true,
  target: ["es2020"],
  charset: "utf8",
  legalComments: "none",
  sourcemap: false,
  write: false,
  metafile: true,
  logLevel: "warning",
});

// The licence of every package bundled, at the end of the file that ships them.
function packagesBundled() {
  const names = new Set();
  for (const input of Object.keys(result.metafile.inputs)) {
    const found = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (found) names.add(found[1]);
  }
  return [...names].sort();
}
const licences = packagesBundled().map((name) => {
  const folder = join(here, "node_modules", name);
  const version = JSON.parse(readFileSync(join(folder, "package.json"), "utf8")).version;
  const file = readdirSync(folder).find((f) => /^licen[cs]e/i.test(f));
  const text = file ? readFileSync(join(folder, file), "utf8").trim() : "(no licence file in the package)";
  return `${name} ${version}\n\n${text.replace(/\*\//g, "* /")}`;
});
const banner = `/* celmut playground editor: CodeMirror 6, bundled by esbuild ${esbuild.version}; sources sha256:${sourcesHash()} */\n`;
const trailer = `\n/* The packages bundled above and their licences:\n\n${licences.join("\n\n----\n\n")}\n*/\n`;
writeFileSync(outfile, banner + result.outputFiles[0].text + trailer);
console.log(`${outfile}: ${(banner.length + result.outputFiles[0].contents.length + trailer.length).toLocaleString()} characters`);
