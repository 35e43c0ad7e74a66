// Drives the web console in headless Chromium against `harness serve --demo`:
// create a session, send a message, see streamed text and a tool card,
// interrupt a long answer, reload and see the history, delete; switch the
// model and permission mode, rewind files and conversation with a preview,
// fork from a message.
//
//   HARNESS_URL   a running gateway (with HARNESS_ROOT, an allowed project
//                 root, and HARNESS_TOKEN if it wants one), or
//   HARNESS_BIN   the binary to start as `serve --demo --addr 127.0.0.1:0
//                 --root <tmp>` (default ../bin/harness from e2e/)
//   CHROMIUM      the browser (default /usr/bin/chromium)
//
// Screenshots go to e2e/artifacts/.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const artifacts = path.join(here, "artifacts");
const LAPTOP = { width: 1366, height: 820 };
const PHONE = { width: 390, height: 844 };
const T = 20_000; // default wait for a UI state

let server; // {url, token, root, stop}
let browser;
const pageErrors = [];

async function startServer(extraArgs = []) {
  const token = process.env.HARNESS_TOKEN || "";
  if (process.env.HARNESS_URL && extraArgs.length === 0) {
    if (!process.env.HARNESS_ROOT) throw new Error("HARNESS_URL is set: set HARNESS_ROOT to a project root the gateway allows");
    return { url: process.env.HARNESS_URL.replace(/\/+$/, ""), token, root: process.env.HARNESS_ROOT, stop: async () => {} };
  }
  const bin = path.resolve(here, process.env.HARNESS_BIN || "../bin/harness");
  if (!fs.existsSync(bin)) throw new Error(`harness binary not found at ${bin}: build it (go build -o bin/harness ./cmd/harness) or set HARNESS_BIN / HARNESS_URL`);
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "harness-e2e-")));
  // Something for the demo's `ls` to list.
  fs.writeFileSync(path.join(root, "README.md"), "# demo project\n");
  fs.mkdirSync(path.join(root, "src"));
  fs.writeFileSync(path.join(root, "src", "main.go"), "package main\n");
  const child = spawn(bin, ["serve", "--demo", "--addr", "127.0.0.1:0", "--root", root, ...extraArgs], { stdio: ["ignore", "pipe", "pipe"], env: process.env });
  let stderr = "";
  child.stderr.on("data", (b) => {
    stderr += b;
    if (process.env.HARNESS_TEST_VERBOSE) process.stderr.write(b);
  });
  const url = await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`no "listening on" line in 30 s\nstdout: ${out}\nstderr: ${stderr}`)), 30_000);
    child.stdout.on("data", (b) => {
      out += b;
      const m = /^harness: listening on (http:\/\/\S+)\s*$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        child.stdout.removeAllListeners("data");
        child.stdout.resume();
        resolve(m[1].replace(/\/+$/, ""));
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`harness exited (${code}) before listening\nstdout: ${out}\nstderr: ${stderr}`));
    });
  });
  return {
    url,
    token,
    root,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const gone = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        const k = setTimeout(() => child.kill("SIGKILL"), 5000);
        await gone;
        clearTimeout(k);
      }
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

before(async () => {
  fs.mkdirSync(artifacts, { recursive: true });
  server = await startServer();
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

async function newPage(viewport, { isMobile = false } = {}) {
  const ctx = await browser.newContext({ viewport, deviceScaleFactor: isMobile ? 2 : 1, isMobile, hasTouch: isMobile });
  const page = await ctx.newPage();
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("console", (m) => {
    if (m.type() === "error" && !/status of 40[149]/.test(m.text())) pageErrors.push(m.text());
  });
  return page;
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(artifacts, `${name}.png`), fullPage: false });
}

/** Opens the console; gives it the token first when the gateway wants one. */
async function open(page, hash = "") {
  await page.goto(server.url + "/" + hash);
  if (server.token) {
    await page.getByTestId("token-input").waitFor({ timeout: T });
    await page.getByTestId("token-input").fill(server.token);
    await page.getByTestId("token-save").click();
  }
}

const byId = (page, id) => page.getByTestId(id);

test("the console drives a session end to end", async () => {
  const page = await newPage(LAPTOP);
  await open(page);
  await page.getByText("Pick a session").waitFor({ timeout: T });

  // The token never travels in a URL.
  const requests = [];
  page.on("request", (r) => requests.push(r.url()));

  // --- create a session
  await byId(page, "new-session").click();
  await byId(page, "new-root").fill(server.root);
  await byId(page, "new-mode").selectOption("direct");
  await shot(page, "01-new-session-form");
  await byId(page, "create-session").click();
  const item = byId(page, "session-item");
  await item.first().waitFor({ timeout: T });
  assert.equal(await item.count(), 1);
  assert.match(await item.first().getAttribute("class"), /active/);
  const sessionId = await item.first().getAttribute("data-session-id");
  assert.ok(sessionId);
  assert.equal(new URL(page.url()).hash, `#s=${encodeURIComponent(sessionId)}`);

  // --- send a message with Enter; Shift+Enter makes a new line
  const input = byId(page, "message-input");
  await input.click();
  await input.type("Hello,");
  await input.press("Shift+Enter");
  await input.type("what is in this project?");
  assert.equal(await input.inputValue(), "Hello,\nwhat is in this project?");
  await input.press("Enter");
  await byId(page, "user-message").first().waitFor({ timeout: T });
  assert.equal(await byId(page, "user-message").first().innerText(), "Hello,\nwhat is in this project?");
  assert.equal(await input.inputValue(), "", "the box is cleared after sending");

  // Streamed text, a thinking block, a tool card with its result, a cost badge.
  const answer = byId(page, "assistant-message").first();
  await answer.locator(".md").first().waitFor({ timeout: T });
  await byId(page, "tool-card").first().waitFor({ timeout: T });
  await byId(page, "cost-badge").first().waitFor({ timeout: 60_000 });
  assert.ok((await answer.locator(".md").first().innerText()).trim().length > 0, "assistant text rendered");
  assert.ok((await byId(page, "thinking-block").count()) >= 1, "thinking shown");
  const card = byId(page, "tool-card").first();
  assert.equal(await card.getByTestId("tool-name").innerText(), "Bash");
  await card.getByTestId("tool-result").waitFor({ timeout: T });
  assert.doesNotMatch(await card.getAttribute("class"), /error/);
  assert.match(await byId(page, "cost-badge").first().innerText(), /\$/);
  await shot(page, "02-answer-with-tool-card");
  assert.ok(await byId(page, "interrupt").isHidden(), "no interrupt button once the turn is over");

  // --- interrupt a long answer with Esc
  await input.fill("Please write a long answer.");
  await input.press("Enter");
  await byId(page, "interrupt").waitFor({ state: "visible", timeout: T });
  const second = byId(page, "assistant-message").nth(1);
  // Wait for streamed answer text (not just thinking) before stopping it.
  await page.waitForFunction(
    (el) => el && [...el.querySelectorAll(".md")].some((m) => m.innerText.trim().length > 20),
    await second.elementHandle({ timeout: T }),
    { timeout: 30_000 },
  );
  const partial = await second.locator(".md").first().innerText();
  await shot(page, "03-long-answer-streaming");
  await page.keyboard.press("Escape");
  await byId(page, "turn-interrupted").waitFor({ timeout: T });
  await byId(page, "interrupt").waitFor({ state: "hidden", timeout: T });
  // The partial answer stays on screen.
  assert.ok((await second.locator(".md").first().innerText()).startsWith(partial.slice(0, 20)));
  await shot(page, "04-interrupted");

  // --- an API error shows in red
  await input.fill("/demo error"); // the demo model's explicit failure (ordinary words are answered)
  await input.press("Enter");
  await byId(page, "turn-error").waitFor({ timeout: 30_000 });
  await shot(page, "05-api-error");

  const before = {
    assistants: await byId(page, "assistant-message").count(),
    tools: await byId(page, "tool-card").count(),
    badges: await byId(page, "cost-badge").count(),
    text: await answer.locator(".md").first().innerText(),
  };

  // --- reload: the history comes back from /events
  await page.reload();
  if (server.token) {
    // The token was kept in session storage: no prompt this time.
    assert.ok(await byId(page, "token-input").isHidden());
  }
  await byId(page, "tool-card").first().waitFor({ timeout: T });
  await byId(page, "turn-error").waitFor({ timeout: T });
  assert.equal(await byId(page, "assistant-message").count(), before.assistants);
  assert.equal(await byId(page, "tool-card").count(), before.tools);
  assert.equal(await byId(page, "cost-badge").count(), before.badges);
  assert.equal(await byId(page, "turn-interrupted").count(), 1);
  assert.equal(await byId(page, "assistant-message").first().locator(".md").first().innerText(), before.text);
  assert.ok((await byId(page, "user-message").count()) >= 3, "the user's messages are shown again");
  await shot(page, "06-after-reload");

  // --- a phone-sized screen
  const phone = await newPage(PHONE, { isMobile: true });
  await open(phone, `#s=${encodeURIComponent(sessionId)}`);
  await byId(phone, "tool-card").first().waitFor({ timeout: T });
  await shot(phone, "07-phone-chat");
  await phone.getByLabel("Show sessions").click();
  await byId(phone, "session-item").first().waitFor({ state: "visible", timeout: T });
  await phone.waitForTimeout(300); // drawer animation
  await shot(phone, "08-phone-sessions");
  const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `no horizontal scrolling on a phone (${overflow}px)`);
  await phone.context().close();

  // --- delete (two clicks: arm, confirm)
  const del = byId(page, "delete-session").first();
  await del.click();
  await del.click();
  await byId(page, "session-item").first().waitFor({ state: "detached", timeout: T });
  await page.getByText("Pick a session").waitFor({ timeout: T });

  if (server.token) {
    for (const u of requests) assert.ok(!u.includes(server.token), `token in a URL: ${u}`);
  }
  assert.deepEqual(pageErrors, [], "no errors in the page");
  await page.context().close();
});

test("a dropped turn stream is resumed with Last-Event-ID", async () => {
  const page = await newPage(LAPTOP);
  // Cut the first POST /turn stream after three SSE frames, as a flaky
  // network would, and record the Last-Event-ID of the requests that follow.
  await page.addInitScript(() => {
    const realFetch = window.fetch.bind(window);
    window.__resumes = [];
    let cut = false;
    window.fetch = async (input, init) => {
      const url = String(input instanceof Request ? input.url : input);
      const headers = new Headers(init?.headers);
      if (url.includes("/events")) window.__resumes.push(headers.get("Last-Event-ID") ?? "");
      const res = await realFetch(input, init);
      if (cut || !new URL(url, location.href).pathname.endsWith("/api/harness/turn") || !res.ok || !res.body) return res;
      cut = true;
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      let frames = 0;
      const body = new ReadableStream({
        async pull(c) {
          const { done, value } = await reader.read();
          if (done) return c.close();
          c.enqueue(value);
          frames += dec.decode(value).split("\n\n").length - 1;
          if (frames >= 3) {
            await reader.cancel();
            c.error(new TypeError("network error (simulated)"));
          }
        },
      });
      return new Response(body, { status: res.status, headers: res.headers });
    };
  });
  await open(page);
  await byId(page, "new-session").click();
  await byId(page, "new-root").fill(server.root);
  await byId(page, "create-session").click();
  await byId(page, "session-item").first().waitFor({ timeout: T });
  await page.waitForFunction(() => window.__resumes.length >= 1, null, { timeout: T }); // the history load
  const input = byId(page, "message-input");
  await input.fill("hello again");
  await input.press("Enter");
  await byId(page, "cost-badge").first().waitFor({ timeout: 60_000 });
  const resumes = await page.evaluate(() => window.__resumes);
  assert.ok(resumes.length >= 2, `resumed: ${JSON.stringify(resumes)}`);
  assert.match(resumes[1], /^\d+$/, "the resume sent Last-Event-ID");
  assert.equal(await byId(page, "tool-card").count(), 1, "nothing shown twice");
  assert.equal(await byId(page, "assistant-message").count(), 1);
  const text = await byId(page, "assistant-message").first().innerText();
  await shot(page, "09-resumed-after-drop");

  // The same as a fresh load of the history.
  await page.reload();
  await byId(page, "cost-badge").first().waitFor({ timeout: T });
  assert.equal(await byId(page, "assistant-message").first().innerText(), text);
  assert.deepEqual(pageErrors, []);
  await byId(page, "delete-session").first().click();
  await byId(page, "delete-session").first().click();
  await byId(page, "session-item").first().waitFor({ state: "detached", timeout: T });
  await page.context().close();
});

test("an approval is answered in the console; a reload shows both sides", async () => {
  // A server whose turns ask before a tool that no rule allows.
  const asking = await startServer(["--permission-mode", "default"]);
  const saved = server;
  server = asking;
  try {
    const page = await newPage(LAPTOP);
    await open(page);
    await byId(page, "new-session").click();
    // The allowed root is offered without typing it.
    await page.waitForFunction((root) => document.getElementById("nf-root")?.value === root, asking.root, { timeout: T });
    // The engine picker lists the engines (loaded from GET /engines).
    await page.waitForFunction(() => document.querySelectorAll("#nf-engine option").length >= 2, null, { timeout: T });
    await byId(page, "create-session").click();
    await byId(page, "session-item").first().waitFor({ timeout: T });

    const input = byId(page, "message-input");
    await input.fill("please touch a marker file");
    await input.press("Enter");
    const card = byId(page, "approval-card").first();
    await card.waitFor({ timeout: 60_000 });
    assert.match(await card.innerText(), /Bash wants to run: touch demo-marker\.txt/);
    await byId(page, "waiting-badge").first().waitFor({ timeout: T });
    await shot(page, "10-approval-pending");
    // The first button has the focus: the keyboard answers.
    await page.waitForFunction(() => document.activeElement?.dataset?.testid === "approval-allow", null, { timeout: T });
    await page.keyboard.press("Enter");
    await card.getByTestId("approval-outcome").filter({ hasText: "Allowed" }).waitFor({ timeout: T });
    await byId(page, "cost-badge").first().waitFor({ timeout: 60_000 });
    assert.ok(fs.existsSync(path.join(asking.root, "demo-marker.txt")), "the approved tool ran");
    await byId(page, "waiting-badge").first().waitFor({ state: "detached", timeout: T });
    await shot(page, "11-approval-allowed");
    // The header names engine, model and permission mode, the session's
    // cost, and that the demo model answers.
    await page.waitForFunction(() => document.querySelector('[data-testid="session-subtitle"]')?.textContent.includes("$"), null, { timeout: T });
    const sub = await byId(page, "session-subtitle").innerText();
    assert.match(sub, /claude-code · claude-\S+ · direct · default · .* · \$/);
    assert.ok(await byId(page, "demo-badge").isVisible());
    assert.equal(await byId(page, "session-title").innerText(), "please touch a marker file");

    // Another browser, no local copy of anything: the log has both sides.
    const other = await newPage(LAPTOP);
    await open(other, new URL(page.url()).hash);
    await byId(other, "cost-badge").first().waitFor({ timeout: T });
    assert.equal(await byId(other, "user-message").first().innerText(), "please touch a marker file");
    assert.match(await byId(other, "approval-outcome").first().innerText(), /Allowed/);
    assert.deepEqual(pageErrors, []);
    await other.context().close();
    // The server goes away: the console says so instead of "Failed to fetch".
    await asking.stop();
    await page.evaluate(() => window.dispatchEvent(new Event("focus")));
    await input.fill("are you there?");
    await input.press("Enter");
    await page.getByText("server unreachable, retrying").first().waitFor({ timeout: T });
    assert.match(await byId(page, "health").getAttribute("class"), /bad/);
    pageErrors.length = 0; // the browser logs the refused connections
    await page.context().close();
  } finally {
    server = saved;
    await asking.stop();
  }
});

test("switch the model and permission mode, rewind with a preview, fork from a message", async () => {
  const page = await newPage(LAPTOP);
  await open(page);
  await byId(page, "new-session").click();
  await byId(page, "new-root").fill(server.root);
  await byId(page, "create-session").click();
  await byId(page, "session-item").first().waitFor({ timeout: T });
  const sessionId = await byId(page, "session-item").first().getAttribute("data-session-id");
  const input = byId(page, "message-input");
  const notes = path.join(server.root, "notes.txt");
  const extra = path.join(server.root, "made-later.txt");

  // --- the first turn
  await input.fill("first question");
  await input.press("Enter");
  await byId(page, "cost-badge").first().waitFor({ timeout: 60_000 });

  // --- header pickers: each PATCHes the session, the header follows
  await byId(page, "session-controls").waitFor({ state: "visible", timeout: T });
  await byId(page, "pick-model").fill("claude-haiku-4-5");
  await byId(page, "pick-model").press("Enter");
  await byId(page, "pick-model").blur();
  await page.waitForFunction(() => document.querySelector('[data-testid="session-subtitle"]')?.textContent.includes("claude-haiku-4-5"), null, { timeout: T });
  await byId(page, "pick-mode").selectOption("acceptEdits");
  await page.waitForFunction(() => document.querySelector('[data-testid="session-subtitle"]')?.textContent.includes("acceptEdits"), null, { timeout: T });
  await shot(page, "12-header-pickers");
  // Another browser sees what was chosen: it is the server's, not this page's.
  const other = await newPage(LAPTOP);
  await open(other, `#s=${encodeURIComponent(sessionId)}`);
  await other.waitForFunction(() => document.getElementById("pick-model")?.value === "claude-haiku-4-5", null, { timeout: T });
  // the mode picker is filled when its options have come (GET /engines),
  // which may be after the model field: wait for it, then assert it
  await other.waitForFunction(() => document.getElementById("pick-mode")?.value === "acceptEdits", null, { timeout: T }).catch(() => {});
  assert.equal(await byId(other, "pick-mode").inputValue(), "acceptEdits");
  await other.context().close();

  // --- the second turn runs with the new model; the project changes around it
  fs.writeFileSync(notes, "before the second turn\n");
  await input.fill("second question");
  await input.press("Enter");
  await byId(page, "cost-badge").nth(1).waitFor({ timeout: 60_000 });
  assert.equal(await byId(page, "cost-badge").nth(1).getAttribute("title"), "claude-haiku-4-5", "the switched model answered");
  fs.writeFileSync(notes, "after the second turn\n");
  fs.writeFileSync(extra, "new\n");

  // --- Rewind to here on the second message: a preview with the diff
  await byId(page, "rewind-here").nth(1).click();
  const dialog = byId(page, "rewind-dialog");
  await dialog.waitFor({ state: "visible", timeout: T });
  const fileRow = dialog.locator('[data-testid="rewind-file"][data-path="notes.txt"]');
  await fileRow.waitFor({ timeout: T });
  assert.equal(await fileRow.locator(".rw-op").textContent(), "modified");
  await fileRow.locator("summary").click();
  const diff = await fileRow.getByTestId("rewind-diff").innerText();
  assert.match(diff, /-before the second turn/);
  assert.match(diff, /\+after the second turn/);
  assert.equal(await dialog.locator('[data-testid="rewind-file"][data-path="made-later.txt"] .rw-op').textContent(), "added");
  assert.ok(await byId(page, "rewind-files").isChecked(), "files are offered");
  assert.ok(await byId(page, "rewind-conversation").isChecked(), "the conversation is offered");
  assert.equal(fs.readFileSync(notes, "utf8"), "after the second turn\n", "a preview changes nothing");
  await shot(page, "13-rewind-preview");
  await byId(page, "rewind-confirm").click();
  await dialog.waitFor({ state: "hidden", timeout: T });
  await byId(page, "rewound-note").waitFor({ timeout: T });
  assert.match(await byId(page, "rewound-note").innerText(), /Rewound to before “second question”: 2 files restored, conversation cut/);
  assert.equal(fs.readFileSync(notes, "utf8"), "before the second turn\n", "the file is as it was before the turn");
  assert.ok(!fs.existsSync(extra), "the file made after it is gone");
  // The undone turn stays, dimmed; the first does not.
  const turns = page.locator("article.turn");
  assert.match(await turns.nth(1).getAttribute("class"), /rewound/);
  assert.doesNotMatch(await turns.nth(0).getAttribute("class"), /rewound/);
  await shot(page, "14-rewound");

  // --- Fork from here on the first answer: the copy opens
  await byId(page, "fork-here").first().click();
  await page.waitForFunction((id) => !location.hash.includes(id), sessionId, { timeout: T });
  await byId(page, "forked-note").waitFor({ timeout: T });
  const forkId = decodeURIComponent(new URL(page.url()).hash.replace(/^#s=/, ""));
  assert.notEqual(forkId, sessionId);
  assert.equal(await byId(page, "session-item").count(), 2);
  assert.deepEqual(await byId(page, "user-message").allInnerTexts(), ["first question"]);
  await input.fill("in the fork");
  await input.press("Enter");
  await byId(page, "cost-badge").nth(1).waitFor({ timeout: 60_000 });
  await shot(page, "15-forked");
  // The note leads back to the original, which has its own history.
  await byId(page, "forked-note").getByRole("button", { name: "Open the original" }).click();
  await page.waitForFunction((id) => location.hash.includes(id), sessionId, { timeout: T });
  await byId(page, "rewound-note").waitFor({ timeout: T });
  assert.deepEqual(pageErrors, []);

  for (let i = 0; i < 2; i++) {
    await byId(page, "delete-session").first().click();
    await byId(page, "delete-session").first().click();
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="session-item"]').length === n, 1 - i, { timeout: T });
  }
  await page.context().close();
});
