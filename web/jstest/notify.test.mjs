// Unit tests of the console's notifications: node --test web/jstest/
import { test } from "node:test";
import assert from "node:assert/strict";
import { ConsoleNotifier } from "../static/notify.js";

class FakeDoc extends EventTarget {
  constructor() {
    super();
    this.title = "harness";
    this.hidden = false;
  }
  show() {
    this.hidden = false;
    this.dispatchEvent(new Event("visibilitychange"));
  }
}

function fakeNotification(permission) {
  const shown = [];
  class N {
    static permission = permission;
    static asked = 0;
    static requestPermission() {
      N.asked++;
      return Promise.resolve("granted");
    }
    constructor(title, opts) {
      this.title = title;
      this.opts = opts;
      shown.push(this);
    }
    close() {}
  }
  return { N, shown };
}

const now = () => Date.now() + 1000;

test("a hidden tab is called when a turn ends or a person is needed; a visible one is not", () => {
  const { N, shown } = fakeNotification("granted");
  globalThis.Notification = N;
  const doc = new FakeDoc();
  const opened = [];
  const n = new ConsoleNotifier({ doc, open: (id) => opened.push(id) });
  // visible: nothing
  n.observe({ type: "user:message", timestamp: now() }, "s1");
  n.observe({ type: "session:complete", timestamp: now() }, "s1");
  n.observe({ type: "process:exit", timestamp: now() }, "s1");
  assert.equal(shown.length, 0);
  assert.equal(doc.title, "harness");

  doc.hidden = true;
  n.observe({ type: "user:message", timestamp: now() }, "s1");
  n.observe({ type: "approval:requested", toolName: "Bash", timestamp: now() }, "s1", "fix the build");
  n.observe({ type: "session:error", kind: "interrupted", timestamp: now() }, "s1");
  n.observe({ type: "process:exit", timestamp: now() }, "s1", "fix the build");
  n.observe({ type: "user:message", timestamp: now() }, "s1");
  n.observe({ type: "session:error", kind: "api_error", timestamp: now() }, "s1");
  n.observe({ type: "process:exit", timestamp: now() }, "s1");
  n.observe({ type: "session:complete", timestamp: now() }, "s1");
  n.observe({ type: "process:exit", timestamp: now() }, "s1");
  assert.deepEqual(
    shown.map((s) => s.title),
    ["Approval needed: Bash", "Turn interrupted", "Turn failed", "Turn completed"],
  );
  assert.equal(shown[0].opts.body, "fix the build");
  assert.equal(doc.title, "(4) harness");
  shown[0].onclick();
  assert.deepEqual(opened, ["s1"]);

  doc.show();
  assert.equal(doc.title, "harness", "the count goes when the tab is seen");
  delete globalThis.Notification;
});

test("history replayed on opening a session calls no one", () => {
  const { N, shown } = fakeNotification("granted");
  globalThis.Notification = N;
  const doc = new FakeDoc();
  doc.hidden = true;
  const n = new ConsoleNotifier({ doc });
  n.opened();
  n.observe({ type: "session:complete", timestamp: Date.now() - 60_000 }, "s1");
  n.observe({ type: "process:exit", timestamp: Date.now() - 60_000 }, "s1");
  n.observe({ type: "approval:requested", timestamp: Date.now() - 60_000 }, "s1");
  assert.equal(shown.length, 0);
  assert.equal(doc.title, "harness");
  delete globalThis.Notification;
});

test("without permission the title still counts; permission is asked only while undecided", () => {
  const { N, shown } = fakeNotification("denied");
  globalThis.Notification = N;
  const doc = new FakeDoc();
  doc.hidden = true;
  const n = new ConsoleNotifier({ doc });
  n.ask();
  assert.equal(N.asked, 0);
  n.observe({ type: "trust:required", timestamp: now() }, "s1");
  assert.equal(shown.length, 0);
  assert.equal(doc.title, "(1) harness");
  N.permission = "default";
  n.ask();
  assert.equal(N.asked, 1);
  delete globalThis.Notification;
});
