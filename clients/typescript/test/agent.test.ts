// The agent-server schemas against a real `harness agent serve --demo`.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseAgentEvent, readSSE, type AgentEvent } from "../src/index.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = path.resolve(here, "..", "..", process.env.HARNESS_BIN || "../../bin/harness");

test("agent serve --demo: every event parses, in the contract's order", async () => {
  const cwd = realpathSync(mkdtempSync(path.join(tmpdir(), "harness-agent-ts-")));
  writeFileSync(path.join(cwd, "hello.go"), "package hello\n");
  const child = spawn(bin, ["agent", "serve", "--demo", "--addr", "127.0.0.1:0", "--cwd", cwd], { stdio: ["ignore", "pipe", "pipe"] });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      const t = setTimeout(() => reject(new Error("agent serve did not start: " + out)), 30_000);
      child.stdout!.on("data", (b: Buffer) => {
        out += b;
        const m = /listening on (http:\/\/\S+)\n/.exec(out);
        if (m) {
          clearTimeout(t);
          resolve(m[1]!);
        }
      });
      child.once("exit", (c) => reject(new Error(`agent serve exited ${c}`)));
    });
    // run.sh exports HARNESS_TOKEN, which agent serve then requires.
    const headers: Record<string, string> = process.env.HARNESS_TOKEN ? { Authorization: `Bearer ${process.env.HARNESS_TOKEN}` } : {};
    if (process.env.HARNESS_TOKEN) {
      assert.equal((await fetch(url + "/cancel", { method: "POST" })).status, 401, "the token is required");
    }
    const ctl = new AbortController();
    const res = await fetch(url + "/events", { signal: ctl.signal, headers });
    assert.equal(res.headers.get("content-type"), "text/event-stream");
    const events: AgentEvent[] = [];
    const done = (async () => {
      for await (const m of readSSE(res.body!)) {
        const ev = parseAgentEvent(m.data);
        events.push(ev);
        if (ev.type === "status" && (ev.state === "idle" || ev.state === "error")) break;
      }
    })();
    // A JSON body says so: fetch would label a string body text/plain,
    // which agent serve refuses (415) as a cross-site form could send it.
    const post = await fetch(url + "/prompt", {
      method: "POST",
      headers: { ...headers, "Content-Type": "application/json" },
      body: JSON.stringify({ content: "what is here?" }),
    });
    assert.equal(post.status, 200);
    await done;
    ctl.abort();
    const types = events.map((e) => e.type);
    assert.equal(types[0], "user");
    assert.deepEqual(events[1], { ...events[1], type: "status", state: "thinking" });
    assert.ok(types.includes("reasoning") && types.includes("text"), types.join(","));
    const call = events.find((e) => e.type === "tool_call");
    const result = events.find((e) => e.type === "tool_result");
    assert.ok(call && call.type === "tool_call" && call.name === "list_dir");
    assert.ok(result && result.type === "tool_result" && !result.isError && result.result.includes("hello.go"));
    const last = events.at(-1)!;
    assert.ok(last.type === "status" && last.state === "idle");
    assert.throws(() => parseAgentEvent(JSON.stringify({ type: "status", timestamp: 1, state: "dancing" })));
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
    rmSync(cwd, { recursive: true, force: true });
  }
});

// An approval says when the use would run outside the agent's sandbox
// (unsandboxed, an extension absent when false).
test("agent serve: an approval's unsandboxed flag parses", () => {
  const out = parseAgentEvent(
    JSON.stringify({ type: "approval", timestamp: 1, requestId: "r1", toolUseId: "t1", tool: "Bash", input: { command: "ls" }, expiresAt: "2026-01-01T00:00:00Z", unsandboxed: true }),
  );
  assert.ok(out.type === "approval" && out.unsandboxed === true && out.requestId === "r1");
  const inside = parseAgentEvent(JSON.stringify({ type: "approval", timestamp: 1, requestId: "r2", tool: "Bash", input: {} }));
  assert.ok(inside.type === "approval" && inside.unsandboxed === undefined);
  assert.throws(() => parseAgentEvent(JSON.stringify({ type: "approval", timestamp: 1, requestId: "r3", tool: "Bash", input: {}, unsandboxed: "yes" })));
});
