// The console's usage view in headless Chromium against `harness serve
// --demo`: a demo turn's usage and a stored Claude rate_limit_event and
// Codex rate-limit answer (as the engines map them: rate_limit events in a
// session's log) reach the totals, the per-engine table, the cost chart
// (uPlot, vendored by make) and the rate-limit meters; the session header
// shows its spend against its budget.
//
//   HARNESS_BIN   the binary (default ../bin/harness from e2e/)
//   CHROMIUM      the browser (default /usr/bin/chromium)

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const T = 20_000;
let child, url, root, browser;

// A stored session whose log holds what the engines emit for a Claude
// rate_limit_event and a Codex account/rateLimits/updated.
function seedLog(dir) {
  const at = Date.now();
  const lines = [
    { seq: 1, type: "session:init", sessionId: "x", engine: "codex", model: "gpt-5", tools: [], claudeSessionId: "", timestamp: at },
    { seq: 2, type: "usage:update", sessionId: "x", engine: "codex", model: "gpt-5", inputTokens: 1200, outputTokens: 80, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.25, timestamp: at },
    { seq: 3, type: "rate_limit", sessionId: "x", engine: "claude-code", limit: "five_hour", usedPercent: 83, status: "allowed_warning", resetsAt: Math.floor(at / 1000) + 3600, timestamp: at },
    { seq: 4, type: "rate_limit", sessionId: "x", engine: "codex", limit: "primary", usedPercent: 42, resetsAt: Math.floor(at / 1000) + 7200, windowMinutes: 300, timestamp: at },
    { seq: 5, type: "session:complete", sessionId: "x", costUsd: 0, usage: {}, numTurns: 1, durationMs: 5, timestamp: at },
  ];
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "0b7e4c8a-1111-4222-8333-944455556666.events.jsonl"), lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
}

before(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "harness-usage-")));
  seedLog(path.join(root, ".chirality", "sessions"));
  const bin = path.resolve(here, process.env.HARNESS_BIN || "../bin/harness");
  const state = fs.mkdtempSync(path.join(os.tmpdir(), "harness-usage-state-"));
  child = spawn(bin, ["serve", "--demo", "--addr", "127.0.0.1:0", "--root", root], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, XDG_STATE_HOME: state } });
  let errOut = "";
  child.stderr.on("data", (b) => (errOut += b));
  url = await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`harness did not listen in 30 s: ${errOut}`)), 30_000);
    child.stdout.on("data", (b) => {
      out += b;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1].replace(/\/+$/, ""));
      }
    });
  });
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: ["--headless", "--no-sandbox", "--disable-gpu"] });
});

after(async () => {
  await browser?.close();
  if (child && child.exitCode === null) {
    const gone = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await gone;
  }
  fs.rmSync(root, { recursive: true, force: true });
});

async function api(method, p, body) {
  const res = await fetch(url + "/api/harness/" + p, { method, headers: body ? { "Content-Type": "application/json" } : {}, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${p}: ${res.status} ${text}`);
  return text;
}

test("the usage view shows costs, a chart and the rate limits; the header the spend against the budget", async () => {
  // A demo turn on Claude Code, in a session with a budget.
  const env = JSON.parse(await api("POST", "session/create", { projectRoot: root, mode: "direct", budget: { maxCostUsd: 5 } }));
  const id = env.session.id;
  await api("POST", "turn", { sessionId: id, message: "hello" });

  const page = await (await browser.newContext({ viewport: { width: 1366, height: 820 } })).newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(`${url}/#s=${id}`);
  const spend = page.getByTestId("session-spend");
  await spend.waitFor({ timeout: T });
  assert.match(await spend.textContent(), /^\$\d+\.\d{4} of \$5\.0000$/);

  await page.getByTestId("usage-button").click();
  const total = page.getByTestId("usage-total");
  await total.waitFor({ timeout: T });
  await page.waitForFunction(() => /over 2 turns/.test(document.querySelector("[data-testid=usage-total]")?.textContent || ""), null, { timeout: T });
  const engines = await page.getByTestId("usage-engines").textContent();
  assert.match(engines, /codex/);
  assert.match(engines, /claude-code/);
  await page.locator("[data-testid=usage-chart] canvas").first().waitFor({ timeout: T });
  const limits = page.getByTestId("rate-limit");
  assert.equal(await limits.count(), 2);
  const first = await limits.nth(0).textContent();
  assert.match(first, /claude-code five_hour: 83% used \(allowed_warning\), resets /);
  assert.match(await limits.nth(1).textContent(), /codex primary: 42% used, resets /);
  assert.equal(await page.locator("[data-testid=rate-limit][data-limit=five_hour] meter").getAttribute("value"), "83");
  fs.mkdirSync(path.join(here, "artifacts"), { recursive: true });
  await page.screenshot({ path: path.join(here, "artifacts", "usage.png") });
  assert.deepEqual(errors, []);
});
