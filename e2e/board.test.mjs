// Drives the console's board in headless Chromium against `harness serve
// --demo` on a git repository: three sessions each in a worktree of its
// own (one made from the console's form, two through the API), each
// making a change (the demo model's `touch` in one, files written in the
// others' worktrees beside a demo turn); the board shows each one's state
// live (waiting for a person, done), its branch and diff size; a diff
// view lists the files and the patch; one merge succeeds, the next
// conflicts and names the path, leaving the project's branch untouched.
//
//   HARNESS_BIN   the binary (default ../bin/harness from e2e/)
//   CHROMIUM      the browser (default /usr/bin/chromium)
//
// Screenshots go to e2e/artifacts/board-*.png.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const artifacts = path.join(here, "artifacts");
const T = 60_000; // a turn starts a real agent process: give it time under load

let harness; // {url, proc}
let browser;
let repo;
const pageErrors = [];

const git = (...args) =>
  execFileSync("git", ["-c", "user.name=test", "-c", "user.email=test@localhost", "-c", "commit.gpgSign=false", ...args], { cwd: repo, encoding: "utf8" }).trim();

/** A git repository with two committed files, on branch main. */
function makeRepo() {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "harness-board-")));
  repo = dir;
  git("init", "-q", "-b", "main");
  fs.writeFileSync(path.join(dir, "README.md"), "# board project\n");
  fs.writeFileSync(path.join(dir, "shared.txt"), "line from the base\n");
  git("add", "README.md", "shared.txt");
  git("commit", "-q", "-m", "base");
  return dir;
}

/** Starts bin/harness serve --demo on root; resolves once it listens. */
function serve(root) {
  const bin = path.resolve(here, process.env.HARNESS_BIN || "../bin/harness");
  if (!fs.existsSync(bin)) throw new Error(`no harness binary at ${bin}: go build -o bin/harness ./cmd/harness, or set HARNESS_BIN`);
  const env = { ...process.env };
  delete env.HARNESS_TOKEN;
  const proc = spawn(bin, ["serve", "--demo", "--addr", "127.0.0.1:0", "--root", root], { stdio: ["ignore", "pipe", "pipe"], env });
  let log = "";
  proc.stderr.on("data", (b) => (log += b));
  return new Promise((resolve, reject) => {
    let out = "";
    proc.stdout.on("data", (b) => {
      out += b;
      const m = /harness: listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ url: m[1].replace(/\/+$/, ""), proc });
    });
    proc.once("exit", (code) => reject(new Error(`harness serve exited (${code}) before listening\n${out}\n${log}`)));
  });
}

async function call(method, route, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(`${harness.url}/api/harness/${route}`, init);
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${text}`);
  return JSON.parse(text);
}

/** Runs a turn through the API and reads its stream to the end. */
async function turn(sessionId, message) {
  const res = await fetch(`${harness.url}/api/harness/turn`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify({ sessionId, message }),
  });
  assert.equal(res.status, 200, `turn of ${sessionId}: ${res.status}`);
  return res.text();
}

before(async () => {
  fs.mkdirSync(artifacts, { recursive: true });
  harness = await serve(makeRepo());
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
  if (harness?.proc && harness.proc.exitCode === null) {
    const gone = new Promise((r) => harness.proc.once("exit", r));
    harness.proc.kill("SIGTERM");
    await gone;
  }
  if (repo) fs.rmSync(repo, { recursive: true, force: true });
});

test("the board shows worktree sessions live, their diffs, a merge and a conflict", async () => {
  const page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("console", (m) => {
    if (m.type() === "error" && !/status of 40[149]/.test(m.text())) pageErrors.push(m.text());
  });
  const byId = (id) => page.getByTestId(id);
  const card = (id) => page.locator(`[data-testid=board-card][data-session="${id}"]`);
  const stateOf = (id) => card(id).getByTestId("board-state");

  // Two sessions through the API, each in its own worktree.
  const made = {};
  for (const name of ["beta", "gamma"]) {
    const { session } = await call("POST", "session/create", { projectRoot: repo, mode: "direct", isolation: "worktree", title: name });
    assert.equal(session.isolation, "worktree");
    assert.match(session.branch, /^harness\//);
    assert.notEqual(session.workdir, repo);
    made[name] = session;
  }

  // One from the console's form, with its worktree box ticked.
  await page.goto(harness.url + "/");
  await byId("new-session").click();
  await byId("new-root").fill(repo);
  await byId("new-mode").selectOption("direct");
  await byId("new-worktree").check();
  await byId("new-base").fill("main");
  await byId("create-session").click();
  await page.locator("[data-testid=session-item].active").waitFor({ timeout: T });
  const alpha = await page.locator("[data-testid=session-item].active").getAttribute("data-session-id");
  const alphaSession = (await call("GET", `session/${encodeURIComponent(alpha)}`)).session;
  assert.equal(alphaSession.isolation, "worktree");
  assert.equal(alphaSession.base, "main");
  // Its agent asks to create a file: it waits for a person.
  await byId("message-input").fill("please touch a marker file");
  await byId("message-input").press("Enter");
  await byId("approval-card").first().waitFor({ timeout: T });

  // beta and gamma change the same line differently, and each runs a turn.
  fs.writeFileSync(path.join(made.beta.workdir, "shared.txt"), "line from beta\n");
  fs.writeFileSync(path.join(made.gamma.workdir, "shared.txt"), "line from gamma\n");
  const turns = Promise.all([turn(made.beta.id, "hello"), turn(made.gamma.id, "hello")]);

  // The board: three cards, each with its branch.
  await byId("board-button").click();
  await byId("board").waitFor({ timeout: T });
  assert.equal(await byId("board-root").inputValue(), repo);
  for (const id of [alpha, made.beta.id, made.gamma.id]) await card(id).waitFor({ timeout: T });
  assert.equal(await byId("board-card").count(), 3);
  assert.equal(await card(made.beta.id).getByTestId("board-branch").innerText(), made.beta.branch);
  assert.equal(await card(alpha).getByTestId("board-branch").innerText(), alphaSession.branch);
  await page.waitForFunction((id) => document.querySelector(`[data-session="${id}"] [data-testid=board-state]`)?.textContent === "waiting for a person", alpha, { timeout: T });
  await turns;
  for (const id of [made.beta.id, made.gamma.id]) {
    await page.waitForFunction((id) => document.querySelector(`[data-session="${id}"] [data-testid=board-state]`)?.textContent === "done", id, { timeout: T });
    await page.waitForFunction((id) => document.querySelector(`[data-session="${id}"] [data-testid=board-diffsize]`)?.textContent === "1 file +1 −1", id, { timeout: T });
  }
  await page.screenshot({ path: path.join(artifacts, "board-1-waiting.png") });

  // A person allows alpha's tool: the board follows it to done, with its file.
  const env = await call("GET", `session/${encodeURIComponent(alpha)}`);
  assert.equal(env.pendingApprovals.length, 1);
  await call("POST", "approval", { sessionId: alpha, requestId: env.pendingApprovals[0].requestId, decision: "allow" });
  await page.waitForFunction((id) => document.querySelector(`[data-session="${id}"] [data-testid=board-state]`)?.textContent === "done", alpha, { timeout: T });
  await page.waitForFunction((id) => document.querySelector(`[data-session="${id}"] [data-testid=board-diffsize]`)?.textContent === "1 file +0 −0", alpha, { timeout: T });
  assert.equal(await stateOf(made.beta.id).innerText(), "done");

  // beta's diff: its one file and the patch; then merge it (squash).
  await card(made.beta.id).getByTestId("board-diff-button").click();
  let pane = page.locator(`[data-testid=board-diff][data-session="${made.beta.id}"]`);
  await pane.locator('[data-testid=board-file][data-path="shared.txt"]').waitFor({ timeout: T });
  assert.equal(await pane.getByTestId("board-file").count(), 1);
  assert.match(await pane.getByTestId("board-file").innerText(), /modified[\s\S]*\+1[\s\S]*−1/);
  const patch = await pane.getByTestId("board-patch").innerText();
  assert.match(patch, /^-line from the base$/m);
  assert.match(patch, /^\+line from beta$/m);
  assert.doesNotMatch(patch, /gamma/, "beta's diff shows only beta's change");
  await pane.getByTestId("board-strategy").selectOption("squash");
  await pane.getByTestId("board-message").fill("beta's line");
  await pane.getByTestId("board-merge").click();
  await pane.getByText(/^Merged into main as [0-9a-f]{12}\.$/).waitFor({ timeout: T });
  assert.equal(fs.readFileSync(path.join(repo, "shared.txt"), "utf8"), "line from beta\n", "the project's tree is updated");
  assert.equal(git("log", "-1", "--format=%s", "main"), "beta's line");
  const tip = git("rev-parse", "main");
  await page.screenshot({ path: path.join(artifacts, "board-2-merged.png") });

  // gamma's merge conflicts on shared.txt: shown, and main is untouched.
  await card(made.gamma.id).getByTestId("board-diff-button").click();
  pane = page.locator(`[data-testid=board-diff][data-session="${made.gamma.id}"]`);
  await pane.locator('[data-testid=board-file][data-path="shared.txt"]').waitFor({ timeout: T });
  assert.match(await pane.getByTestId("board-patch").innerText(), /^\+line from gamma$/m);
  await pane.getByTestId("board-merge").click();
  await pane.getByTestId("board-conflicts").waitFor({ timeout: T });
  assert.deepEqual(await pane.getByTestId("board-conflict").allInnerTexts(), ["shared.txt"]);
  assert.equal(git("rev-parse", "main"), tip, "the conflict left main where it was");
  assert.equal(fs.readFileSync(path.join(repo, "shared.txt"), "utf8"), "line from beta\n");
  assert.equal(git("status", "--porcelain", "--untracked-files=no"), "", "and the project's tree clean");
  await page.screenshot({ path: path.join(artifacts, "board-3-conflict.png") });

  // alpha's file merges beside beta's change.
  await card(alpha).getByTestId("board-diff-button").click();
  pane = page.locator(`[data-testid=board-diff][data-session="${alpha}"]`);
  await pane.locator('[data-testid=board-file][data-path="demo-marker.txt"]').waitFor({ timeout: T });
  await pane.getByTestId("board-merge").click();
  await pane.getByText(/^Merged into main/).waitFor({ timeout: T });
  assert.ok(fs.existsSync(path.join(repo, "demo-marker.txt")));

  // Open takes the person to the session in the console.
  await card(made.gamma.id).getByTestId("board-open").click();
  await byId("board").waitFor({ state: "hidden", timeout: T });
  await page.waitForFunction((id) => location.hash === `#s=${encodeURIComponent(id)}`, made.gamma.id, { timeout: T });

  assert.deepEqual(pageErrors, []);
});
