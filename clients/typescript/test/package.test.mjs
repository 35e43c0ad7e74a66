// The package as npm publishes it: what `npm pack` ships, that the main
// entry bundles for a browser without Node built-ins (and without the
// JSON-RPC client), and that Node resolves both entries by name.
// Runs after `npm run build` (dist/ is what gets packed).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { installPacked, browserBundle, pkgDir } from "../scripts/packed.mjs";

let dir;
let files;
before(() => ({ dir, files } = installPacked()));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

test("npm pack ships both entries with their types, and no tests or demo script", () => {
  for (const f of ["package.json", "dist/src/index.js", "dist/src/index.d.ts", "dist/src/rpc.js", "dist/src/rpc.d.ts", "dist/src/client.js", "dist/src/sse.js"]) {
    assert.ok(files.includes(f), `${f} is packed (files: ${files.join(", ")})`);
  }
  for (const f of files) {
    assert.doesNotMatch(f, /^dist\/test\/|rpc-demo/, `${f} must not be packed`);
  }
});

test("the main entry bundles for the browser: no Node built-ins, no JSON-RPC client", async () => {
  const b = await browserBundle(dir, `import * as h from "@chirality/harness-client"; globalThis.h = h;`);
  assert.ok(b.inputs.some((f) => f.endsWith("harness-client/dist/src/client.js")), b.inputs.join("\n"));
  for (const f of b.inputs) {
    assert.doesNotMatch(f, /rpc\.js$|^node:|child_process|readline/, `${f} in the browser bundle`);
  }
  assert.ok(b.gzip > 0 && b.minified > b.gzip);
});

test("the rpc subpath does not resolve for the browser", async () => {
  await assert.rejects(
    browserBundle(dir, `import { HarnessRpc } from "@chirality/harness-client/rpc"; globalThis.r = HarnessRpc;`),
    (err) => /harness-client\/rpc/.test(String(err?.errors?.[0]?.text ?? err)),
  );
});

test("Node resolves both entries by name; the main entry has no JSON-RPC client", () => {
  const script = path.join(dir, "check.mjs");
  fs.writeFileSync(
    script,
    `const main = await import("@chirality/harness-client");
     const rpc = await import("@chirality/harness-client/rpc");
     console.log(JSON.stringify({ client: typeof main.HarnessClient, sse: typeof main.readSSE, approve: typeof main.HarnessClient.prototype.approve,
       mainRpc: typeof main.HarnessRpc, rpc: typeof rpc.HarnessRpc, rpcError: typeof rpc.RpcError }));`,
  );
  const got = JSON.parse(execFileSync(process.execPath, [script], { cwd: dir, encoding: "utf8" }));
  assert.deepEqual(got, { client: "function", sse: "function", approve: "function", mainRpc: "undefined", rpc: "function", rpcError: "function" });
});

// Issue 34.2: an app installs the client straight from a checkout, exactly
// `npm install /path/to/clients/typescript`: the checkout has no dist/ and
// no node_modules, so prepare must build it with the client's own tools
// (it failed with "tsc: not found"), and the app then imports it by name.
test("npm install <checkout>/clients/typescript works from a plain checkout", () => {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "harness-client-plain-")));
  try {
    const checkout = path.join(tmp, "checkout", "clients", "typescript");
    for (const f of ["package.json", "package-lock.json", "tsconfig.json", "src", "test", "scripts"]) {
      fs.cpSync(path.join(pkgDir, f), path.join(checkout, f), { recursive: true });
    }
    const app = path.join(tmp, "app");
    fs.mkdirSync(app);
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
    const npm = (args) => execFileSync("npm", args, { cwd: app, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    npm(["init", "-y"]);
    npm(["install", "--no-audit", "--no-fund", checkout]);
    const out = execFileSync(process.execPath, ["--input-type=module", "-e",
      `import { HarnessClient } from "@chirality/harness-client"; console.log(typeof HarnessClient, new HarnessClient({ baseUrl: "http://127.0.0.1:1" }).url("health"));`],
      { cwd: app, encoding: "utf8" });
    assert.equal(out.trim(), "function http://127.0.0.1:1/api/harness/health");
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
