// The rpc demo client against a real `harness rpc --demo`.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync, realpathSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { HarnessRpc, RpcError } from "../src/rpc.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = path.resolve(here, "..", "..", process.env.HARNESS_BIN || "../../bin/harness");

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("node", [path.resolve(here, "..", "src", "rpc-demo.js"), "--harness", bin, ...args], { timeout: 90_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

test("npm run rpc prints a streamed turn with its tool and answers an approval", async () => {
  const cwd = realpathSync(mkdtempSync(path.join(tmpdir(), "harness-rpc-ts-")));
  writeFileSync(path.join(cwd, "hello.go"), "package hello\n");
  try {
    let r = await run(["--cwd", cwd, "--demo", "What is here?"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Demo answer/);
    assert.match(r.stdout, /\[turn completed\]/);
    assert.match(r.stderr, /⚙ Bash/);
    r = await run(["--cwd", cwd, "--demo", "--yes", "please touch a file"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /\? Bash wants to run .*touch demo-marker\.txt.*: once/);
    assert.ok(existsSync(path.join(cwd, "demo-marker.txt")), "the approved tool ran");
    r = await run(["--cwd", cwd, "--demo", "--engine", "anthropic", "What is here?"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /⚙ list_dir/);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test("errors come back as RpcError with the protocol's codes", async () => {
  const cwd = realpathSync(mkdtempSync(path.join(tmpdir(), "harness-rpc-ts-")));
  const rpc = new HarnessRpc(bin, ["--cwd", cwd]);
  try {
    await assert.rejects(rpc.call("thread.get", { threadId: "nope" }), (e: unknown) => e instanceof RpcError && e.code === -32001);
    await assert.rejects(rpc.call("no.such"), (e: unknown) => e instanceof RpcError && e.code === -32601);
  } finally {
    assert.equal(await rpc.close(), 0);
    rmSync(cwd, { recursive: true, force: true });
  }
});
