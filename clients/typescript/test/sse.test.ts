// Unit tests of the SSE parser and reader (no server needed).
import { test } from "node:test";
import assert from "node:assert/strict";
import { SSEParser, readSSE, type SSEMessage } from "../src/sse.js";

function parseAll(chunks: string[]): { msgs: SSEMessage[]; comments: string[] } {
  const comments: string[] = [];
  const p = new SSEParser((c) => comments.push(c));
  const msgs: SSEMessage[] = [];
  for (const c of chunks) msgs.push(...p.feed(c));
  p.end();
  return { msgs, comments };
}

test("parses id and data lines into messages", () => {
  const { msgs } = parseAll(['id: 1\ndata: {"a":1}\n\nid: 2\ndata: {"a":2}\n\n']);
  assert.deepEqual(msgs, [
    { event: "message", data: '{"a":1}', id: "1" },
    { event: "message", data: '{"a":2}', id: "2" },
  ]);
});

test("handles chunks cut anywhere, including between CR and LF", () => {
  const text = 'id: 7\r\ndata: {"x":"y"}\r\n\r\nid: 8\rdata: z\r\r: heartbeat\n\n';
  const whole = parseAll([text]).msgs;
  assert.equal(whole.length, 2);
  for (let cut = 0; cut <= text.length; cut++) {
    assert.deepEqual(parseAll([text.slice(0, cut), text.slice(cut)]).msgs, whole, `cut at ${cut}`);
  }
  // One character at a time.
  assert.deepEqual(parseAll([...text]).msgs, whole);
  assert.deepEqual(whole[1], { event: "message", data: "z", id: "8" });
});

test("reports comments and ignores them as messages", () => {
  const { msgs, comments } = parseAll([": heartbeat\n\n:x\n\ndata: a\n\n"]);
  assert.deepEqual(comments, ["heartbeat", "x"]);
  assert.equal(msgs.length, 1);
});

test("joins multi-line data, keeps the last id across messages, reads event and retry", () => {
  const { msgs } = parseAll(["id: 3\nevent: custom\nretry: 1500\ndata: a\ndata:b\ndata\n\ndata: c\n\n"]);
  assert.deepEqual(msgs, [
    { event: "custom", data: "a\nb\n", id: "3", retry: 1500 },
    { event: "message", data: "c", id: "3" },
  ]);
});

test("strips a leading BOM and drops an unterminated message at the end", () => {
  const { msgs } = parseAll(["\uFEFFdata: one\n\ndata: two"]);
  assert.deepEqual(msgs, [{ event: "message", data: "one", id: "" }]);
});

test("an id with NUL is ignored; a blank line without data dispatches nothing", () => {
  const { msgs } = parseAll(["id: 5\n\nid: 6\0\ndata: d\n\n"]);
  assert.deepEqual(msgs, [{ event: "message", data: "d", id: "5" }]);
});

test("readSSE decodes UTF-8 split across chunks", async () => {
  const bytes = new TextEncoder().encode('id: 1\ndata: {"t":"héllo ✓ 😀"}\n\n');
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      for (let i = 0; i < bytes.length; i++) c.enqueue(bytes.slice(i, i + 1));
      c.close();
    },
  });
  const out: SSEMessage[] = [];
  for await (const m of readSSE(stream)) out.push(m);
  assert.equal(out.length, 1);
  assert.deepEqual(JSON.parse(out[0]!.data), { t: "héllo ✓ 😀" });
});

test("readSSE throws when the body errors", async () => {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      ctl = c;
      c.enqueue(new TextEncoder().encode("data: a\n\n"));
    },
  });
  const got: string[] = [];
  await assert.rejects(async () => {
    for await (const m of readSSE(stream)) {
      got.push(m.data);
      ctl.error(new TypeError("terminated"));
    }
  }, /terminated/);
  assert.deepEqual(got, ["a"]);
});
