// npm's prepare step: builds dist/ with the pinned TypeScript. npm runs it
// in this directory on `npm install` here, on `npm pack`, and when an app
// installs the client from a checkout (`npm install /path/to/clients/typescript`),
// where the client's own devDependencies are not installed: then they are
// installed here first, from this package's lock (scripts off), instead of
// failing with "tsc: not found".

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const tsc = path.join(root, "node_modules", "typescript", "package.json");
if (!fs.existsSync(tsc)) {
  console.error("@chirality/harness-client: installing its build tools (npm ci in " + root + ")");
  // The outer install's settings (global, prefix, omit=dev…) are not this one's.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_config_/i.test(k)));
  execFileSync(npm, ["ci", "--ignore-scripts", "--include=dev", "--no-audit", "--no-fund"], { cwd: root, stdio: ["ignore", "inherit", "inherit"], env });
}
execFileSync(process.execPath, [path.join(root, "node_modules", "typescript", "bin", "tsc"), "-p", path.join(root, "tsconfig.json")], { cwd: root, stdio: "inherit" });
