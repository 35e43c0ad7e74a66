// The cluster's nodes in the console (nodes.js) and steer's offer
// (steer.js): node --test web/jstest/
import { test } from "node:test";
import assert from "node:assert/strict";
import { NodesView, nodeRows, nodeNote, nodeBlocked, ago } from "../static/nodes.js";
import { canSteer, steer } from "../static/steer.js";
import { ApiError } from "../static/api.js";

const now = Date.parse("2026-11-26T04:00:00Z");

test("the Nodes view lists up nodes first, with sessions and when each was last seen", () => {
  const rows = nodeRows(
    [
      { node: "zulu", state: "up", sessions: 2, lastSeen: "2026-11-26T03:59:55Z", clusterAddr: "127.0.0.1:7001" },
      { node: "alpha", state: "down", sessions: 1, lastSeen: "2026-11-26T03:55:00Z" },
      { node: "bravo", state: "up", sessions: 0, lastSeen: "2026-11-26T03:59:00Z" },
      { state: "up" }, // no name: not a node
    ],
    now,
  );
  assert.deepEqual(
    rows.map((r) => [r.name, r.state, r.sessions, r.lastSeen]),
    [
      ["bravo", "up", 0, "1 min ago"],
      ["zulu", "up", 2, "5 s ago"],
      ["alpha", "down", 1, "5 min ago"],
    ],
  );
  assert.equal(rows[1].addr, "127.0.0.1:7001");
  assert.deepEqual(nodeRows(null), []);
});

test("an unknown state is down, a bad count is 0, an unparsable time is blank", () => {
  const [r] = nodeRows([{ node: "n", state: "weird", sessions: -3, lastSeen: "never" }], now);
  assert.deepEqual([r.state, r.sessions, r.lastSeen], ["down", 0, ""]);
  assert.equal(ago("0001-01-01T00:00:00Z", now), "");
});

test("a session's node: a badge off nothing, marked and blocked when its node is down", () => {
  assert.equal(nodeNote({ id: "s" }), null, "not on a cluster: no badge");
  assert.equal(nodeBlocked({ id: "s" }), "");
  assert.deepEqual(nodeNote({ node: "a", nodeState: "up" }), { text: "a", title: "On node a", down: false });
  assert.equal(nodeBlocked({ node: "a", nodeState: "up" }), "");
  const down = { node: "b", nodeState: "down" };
  assert.equal(nodeNote(down).down, true);
  assert.equal(nodeNote(down).text, "b down");
  assert.match(nodeBlocked(down), /node b is down/);
  assert.equal(nodeNote(down).title, nodeBlocked(down), "the badge says why send is off");
});

test("Steer is offered only for an engine whose controls say steer", () => {
  const engines = [
    { name: "anthropic", controls: { fork: true, rewind: true, steer: true } },
    { name: "opencode", controls: { fork: true, rewind: false, steer: false } },
    { name: "old" },
  ];
  assert.equal(canSteer(engines, "anthropic"), true);
  assert.equal(canSteer(engines, "opencode"), false);
  assert.equal(canSteer(engines, "old"), false);
  assert.equal(canSteer(engines, "missing"), false);
  assert.equal(canSteer(null, "anthropic"), false);
});

// A stand-in for the console's el helper and a root: plain objects.
const fakeEl = (tag, attrs = {}, ...children) => ({ tag, attrs, children: children.filter((c) => c !== null && c !== undefined) });
const fakeRoot = () => ({ hidden: true, children: [], replaceChildren(...c) { this.children = c; } });
const texts = (n) => (typeof n === "string" ? [n] : [...(n.attrs?.text !== undefined ? [n.attrs.text] : []), ...n.children.flatMap(texts)]);

test("the Nodes view renders each node's row on a node and hides on any other server (404)", async () => {
  const answers = [[{ node: "solo", state: "up", sessions: 1, lastSeen: new Date().toISOString() }]];
  const calls = [];
  const api = { json: async (m, p) => { calls.push(`${m} ${p}`); const a = answers.shift(); if (a instanceof Error) throw a; return a; } };
  const root = fakeRoot();
  let changed = 0;
  const v = new NodesView({ api, el: fakeEl, root, changed: () => changed++ });
  await v.load();
  v.stop();
  assert.deepEqual(calls, ["GET nodes"]);
  assert.equal(root.hidden, false);
  assert.equal(changed, 1, "a node's state was news");
  const rows = root.children[1].children;
  assert.equal(rows.length, 1);
  assert.equal(rows[0].attrs["data-node"], "solo");
  assert.deepEqual(texts(rows[0]).slice(0, 3), ["solo", "up", "1 session"]);
  assert.match(texts(rows[0])[3], /^seen \d+ s ago$/);
  assert.deepEqual(texts(root.children[0]), ["Nodes (1/1 up)"]);

  // Not a node: 404, nothing shown, no more polling.
  answers.push(Object.assign(new Error("404 Not Found"), { status: 404 }));
  await v.load();
  assert.equal(root.hidden, true);
  assert.deepEqual(root.children, []);
  assert.equal(v.timer, null);
});

test("steer posts the message to the session's steer route and gives back the server's refusal as said", async () => {
  const calls = [];
  const answers = [{ delivered: true }, new ApiError(422, 'the opencode engine cannot steer a running turn; these can: anthropic, claude-code'), new ApiError(409, "no turn is running")];
  const api = { json: async (m, p, b) => { calls.push([m, p, b]); const a = answers.shift(); if (a instanceof Error) throw a; return a; } };
  assert.deepEqual(await steer(api, "a/b", "go left"), { ok: true });
  assert.deepEqual(calls[0], ["POST", "session/a%2Fb/steer", { message: "go left" }]);
  const r = await steer(api, "s", "x");
  assert.deepEqual(r, { ok: false, status: 422, message: "the opencode engine cannot steer a running turn; these can: anthropic, claude-code" });
  assert.equal((await steer(api, "s", "x")).status, 409);
});
