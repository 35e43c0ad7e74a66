// npm run rpc -- [--harness BIN] [--cwd DIR] [--demo] [--yes] [--engine anthropic|claude-code] "prompt"
//
// Runs one turn through `harness rpc` and prints it as it streams: the
// answer on stdout, reasoning, tools and approvals on stderr. Approval
// requests are answered "once" with --yes, "reject" otherwise.

import path from "node:path";
import { fileURLToPath } from "node:url";
import { HarnessRpc } from "./rpc.js";

const here = path.dirname(fileURLToPath(import.meta.url));
let bin = process.env.HARNESS_BIN || path.resolve(here, "..", "..", "..", "..", "bin", "harness");
let cwd = process.cwd();
let demo = false;
let yes = false;
let engine = "";
const words: string[] = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!;
  if (a === "--harness") bin = argv[++i]!;
  else if (a === "--cwd") cwd = argv[++i]!;
  else if (a === "--demo") demo = true;
  else if (a === "--yes") yes = true;
  else if (a === "--engine") engine = argv[++i]!;
  else words.push(a);
}
const prompt = words.join(" ").trim();
if (!prompt) {
  console.error('usage: npm run rpc -- [--harness BIN] [--cwd DIR] [--demo] [--yes] [--engine E] "prompt"');
  process.exit(2);
}

const rpc = new HarnessRpc(bin, ["--cwd", cwd, ...(demo ? ["--demo"] : [])], (s) => process.stderr.write(s));
await rpc.call("initialize", { clientInfo: { name: "harness-rpc-demo", version: "1" } });
const { thread } = await rpc.call<{ thread: { threadId: string } }>("thread.create", { title: prompt.slice(0, 60) });
let status = "";
const done = new Promise<void>((resolve) => {
  rpc.onNotification(async ({ method, params }) => {
    switch (method) {
      case "item.delta":
        if (params.kind === "text") process.stdout.write(String(params.delta));
        else if (params.kind === "reasoning") process.stderr.write(".");
        break;
      case "item.started": {
        const item = params.item as { type: string; data?: { name?: string; input?: unknown } };
        if (item.type === "tool_exec") process.stderr.write(`\n⚙ ${item.data?.name} ${JSON.stringify(item.data?.input)}\n`);
        break;
      }
      case "approval.requested": {
        const decision = yes ? "once" : "reject";
        process.stderr.write(`? ${params.tool} wants to run ${JSON.stringify(params.input)}: ${decision}\n`);
        await rpc.call("approval.respond", { requestId: params.requestId, decision });
        break;
      }
      case "turn.completed":
        status = String((params.turn as { status: string }).status);
        process.stdout.write(`\n[turn ${status}]\n`);
        resolve();
        break;
      case "turn.error":
        status = "error";
        process.stdout.write(`\n[turn error: ${(params.error as { message: string }).message}]\n`);
        resolve();
        break;
    }
  });
});
const input = [{ type: "text", text: prompt }];
await rpc.call("turn.start", { threadId: thread.threadId, input, ...(engine ? { model: { providerID: engine } } : {}) });
await done;
const code = await rpc.close();
process.exit(status === "completed" && code === 0 ? 0 : 1);
