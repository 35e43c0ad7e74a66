// Helpers shared by test/package.test.mjs and scripts/size.mjs: the package
// as npm publishes it (`npm pack`), installed into a scratch node_modules,
// and bundled for the browser with esbuild as an app's bundler would.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import * as esbuild from "esbuild";

export const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Packs the built package (dist/ must be current) and installs the
 * tarball's contents as node_modules/@chirality/harness-client of a new
 * scratch directory, with zod linked from this package's node_modules.
 * Returns the directory and the packed file list; the caller removes it. */
export function installPacked() {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "harness-client-pack-")));
  const out = execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", dir], {
    cwd: pkgDir,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  const [info] = JSON.parse(out);
  const target = path.join(dir, "node_modules", "@chirality", "harness-client");
  fs.mkdirSync(target, { recursive: true });
  execFileSync("tar", ["-xzf", path.join(dir, info.filename), "-C", target, "--strip-components=1"]);
  fs.symlinkSync(path.join(pkgDir, "node_modules", "zod"), path.join(dir, "node_modules", "zod"));
  return { dir, files: info.files.map((f) => f.path) };
}

/** Bundles `code` (an ES module importing the package by name) from dir
 * for the browser, minified, and returns its sizes and the input files. */
export async function browserBundle(dir, code) {
  const result = await esbuild.build({
    stdin: { contents: code, resolveDir: dir, loader: "js" },
    absWorkingDir: dir,
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  const bytes = result.outputFiles[0].contents;
  return { minified: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length, inputs: Object.keys(result.metafile.inputs) };
}
