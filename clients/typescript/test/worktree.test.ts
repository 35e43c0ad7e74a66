// Worktree sessions in the client: the session's isolation fields parse,
// the create body accepts isolation "worktree" only, and mergeSession
// turns a 409 with conflicts into {merged: false, conflicts} while other
// 409s (a dirty tree, a running turn) reject. A fake fetch stands in for
// the gateway.
import { test } from "node:test";
import assert from "node:assert/strict";
import { CreateSessionRequestSchema, HarnessClient, HarnessError, SessionSchema } from "../src/index.js";

test("a worktree session's fields parse; create takes isolation worktree only", () => {
  const s = SessionSchema.parse({
    id: "s1", createdAt: "t", updatedAt: "t", projectRoot: "/p", persona: null, mode: "direct", claudeSessionId: null,
    schemaVersion: 1, isolation: "worktree", workdir: "/state/wt/s1", branch: "harness/s1", base: "main", baseCommit: "abc",
  });
  assert.equal(s.workdir, "/state/wt/s1");
  assert.equal(s.branch, "harness/s1");
  assert.ok(CreateSessionRequestSchema.safeParse({ projectRoot: "/p", mode: "direct", isolation: "worktree", base: "origin/main" }).success);
  assert.ok(!CreateSessionRequestSchema.safeParse({ projectRoot: "/p", mode: "direct", isolation: "vm" }).success);
});

test("diff, merge and forced delete over the wire", async () => {
  const sent: string[] = [];
  let mergeReply: Response = Response.json({ merged: true, commit: "c1", into: "main" });
  const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    sent.push(`${init?.method ?? "GET"} ${url.pathname}${url.search} ${init?.body ?? ""}`);
    if (url.pathname.endsWith("/diff")) {
      return Response.json({ base: "main", branch: "harness/s1", files: [{ path: "a.txt", status: "added", additions: 1, deletions: 0 }], patch: "+a\n" });
    }
    if (url.pathname.endsWith("/merge")) return mergeReply;
    return new Response(null, { status: 204 });
  }) as typeof fetch;
  const c = new HarnessClient({ baseUrl: "http://gw.test", fetch: fakeFetch });

  const d = await c.sessionDiff("s1");
  assert.deepEqual(d.files.map((f) => `${f.status} ${f.path} +${f.additions}`), ["added a.txt +1"]);
  assert.deepEqual(await c.mergeSession("s1", { strategy: "squash", message: "m" }), { merged: true, commit: "c1", into: "main" });

  mergeReply = Response.json({ error: "merge conflicts in [a.txt]", merged: false, conflicts: ["a.txt"] }, { status: 409 });
  const r = await c.mergeSession("s1");
  assert.equal(r.merged, false);
  assert.deepEqual(r.conflicts, ["a.txt"]);

  mergeReply = Response.json({ error: "merge target has uncommitted changes" }, { status: 409 });
  await assert.rejects(c.mergeSession("s1"), (e: unknown) => e instanceof HarnessError && e.status === 409 && /uncommitted/.test(e.message));
  await assert.rejects(c.mergeSession("s1", { strategy: "octopus" as "merge" }));

  await c.deleteSession("s1", undefined, { force: true });
  assert.deepEqual(sent, [
    "GET /api/harness/session/s1/diff ",
    'POST /api/harness/session/s1/merge {"strategy":"squash","message":"m"}',
    "POST /api/harness/session/s1/merge {}",
    "POST /api/harness/session/s1/merge {}",
    "DELETE /api/harness/session/s1?force=1 ",
  ]);
});
