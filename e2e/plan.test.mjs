// The console's plan review card in headless Chromium against
// `harness serve --demo`, a session switched to permission mode plan in
// its header: the demo model's
// "/demo plan" ends a plan (ExitPlanMode); the card shows it as markdown,
// "Keep planning" sends feedback back, "Approve, accept edits" lets the
// agent go on, and the session's next turn runs in acceptEdits.
//
//   HARNESS_BIN  the binary (default ../bin/harness from e2e/)
//   CHROMIUM     the browser (default /usr/bin/chromium)

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const T = 60_000;
let gw; // {url, root, child}
let browser;

/** Starts `harness serve --demo` on a free port of loopback. */
async function serve() {
  const bin = path.resolve(here, process.env.HARNESS_BIN || "../bin/harness");
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "harness-plan-")));
  fs.writeFileSync(path.join(root, "README.md"), "# plan project\n");
  const child = spawn(bin, ["serve", "--demo", "--addr", "127.0.0.1:0", "--root", root], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  const url = await new Promise((resolve, reject) => {
    child.stdout.on("data", (b) => {
      out += b;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1].replace(/\/+$/, ""));
    });
    child.once("exit", (code) => reject(new Error(`harness exited (${code}): ${out}`)));
  });
  child.stdout.resume();
  return { url, root, child };
}

before(async () => {
  gw = await serve();
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: ["--headless", "--no-sandbox", "--disable-gpu"] });
});

after(async () => {
  await browser?.close();
  if (gw) {
    const gone = new Promise((r) => gw.child.once("exit", r));
    gw.child.kill("SIGTERM");
    await gone;
    fs.rmSync(gw.root, { recursive: true, force: true });
  }
});

/** The permission modes of the session's turns, from its event log. */
async function turnModes(id) {
  const res = await fetch(`${gw.url}/api/harness/session/${encodeURIComponent(id)}/events?after=0`, { headers: { Accept: "text/event-stream" } });
  const text = await res.text();
  return [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1])).filter((e) => e.type === "session:init").map((e) => e.permissionMode);
}

test("a plan is reviewed in the console: revised with feedback, then approved in acceptEdits; the next turn runs in it", async () => {
  const errors = [];
  const page = await (await browser.newContext({ viewport: { width: 1366, height: 820 } })).newPage();
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(gw.url + "/");
  await page.getByTestId("new-session").click();
  await page.waitForFunction((root) => document.getElementById("nf-root")?.value === root, gw.root, { timeout: T });
  await page.getByTestId("create-session").click();
  const item = page.getByTestId("session-item").first();
  await item.waitFor({ timeout: T });
  const id = await item.getAttribute("data-session-id");
  await page.getByTestId("session-controls").waitFor({ state: "visible", timeout: T });
  await page.getByTestId("pick-mode").selectOption("plan");
  await page.waitForFunction(() => document.querySelector('[data-testid="session-subtitle"]')?.textContent.includes("plan"), null, { timeout: T });

  const input = page.getByTestId("message-input");
  // Sends text once the console takes a message (its Send button is
  // enabled only when no turn runs and there is text).
  const say = async (text) => {
    await input.fill(text);
    await page.waitForFunction(() => !document.getElementById("send")?.disabled, null, { timeout: T });
    await input.press("Enter");
    await page.waitForFunction(() => document.getElementById("input")?.value === "", null, { timeout: T });
  };
  await say("/demo plan");
  let card = page.getByTestId("plan-card").first();
  await card.waitFor({ timeout: T });
  // The plan is rendered as markdown.
  await card.locator("h2", { hasText: "Demo plan" }).waitFor({ timeout: T });
  assert.equal(await card.locator("ol li").count(), 3);

  // Keep planning without feedback is refused in the card; with it, the
  // agent has the feedback and the turn goes on.
  await card.getByTestId("plan-feedback").fill("also update the changelog");
  await card.getByTestId("plan-revise").click();
  await card.getByTestId("plan-outcome").filter({ hasText: "also update the changelog" }).waitFor({ timeout: T });
  await page.getByTestId("cost-badge").first().waitFor({ timeout: T });

  // A second plan, approved in acceptEdits.
  await say("/demo plan");
  card = page.getByTestId("plan-card").nth(1);
  await card.waitFor({ timeout: T });
  await card.getByTestId("plan-approve-edits").click();
  await card.getByTestId("plan-outcome").filter({ hasText: "acceptEdits" }).waitFor({ timeout: T });
  await page.getByTestId("cost-badge").nth(1).waitFor({ timeout: T });

  // The next turn runs in the mode the person chose.
  await say("hello after the plan");
  await page.getByTestId("cost-badge").nth(2).waitFor({ timeout: T });
  assert.deepEqual(await turnModes(id), ["plan", "plan", "acceptEdits"]);
  fs.mkdirSync(path.join(here, "artifacts"), { recursive: true });
  await page.screenshot({ path: path.join(here, "artifacts", "plan-approved.png") });
  assert.deepEqual(errors, []);
});
