// Server-sent events over fetch. EventSource can neither POST nor send an
// Authorization header, so the console reads text/event-stream bodies
// itself, following the parsing rules of the HTML standard.

/** Incremental SSE parser: feed(text) returns the completed messages
 * ({event, data, id, retry?}); chunks may be cut anywhere. */
export class SSEParser {
  constructor(onComment) {
    this.onComment = onComment;
    this.buf = "";
    this.data = [];
    this.event = "";
    this.retry = undefined;
    this.lastEventId = "";
    this.started = false;
  }

  feed(chunk) {
    if (!this.started && chunk !== "") {
      this.started = true;
      if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
    }
    this.buf += chunk;
    const out = [];
    let start = 0;
    for (;;) {
      let end = -1;
      let len = 0;
      for (let i = start; i < this.buf.length; i++) {
        const c = this.buf.charCodeAt(i);
        if (c === 10) {
          end = i;
          len = 1;
          break;
        }
        if (c === 13) {
          if (i + 1 >= this.buf.length) break; // wait: "\n" may follow
          end = i;
          len = this.buf.charCodeAt(i + 1) === 10 ? 2 : 1;
          break;
        }
      }
      if (end < 0) break;
      const msg = this.line(this.buf.slice(start, end));
      start = end + len;
      if (msg) out.push(msg);
    }
    this.buf = this.buf.slice(start);
    return out;
  }

  line(line) {
    if (line === "") {
      const retry = this.retry;
      this.retry = undefined;
      if (this.data.length === 0) {
        this.event = "";
        return null;
      }
      const msg = { event: this.event || "message", data: this.data.join("\n"), id: this.lastEventId };
      if (retry !== undefined) msg.retry = retry;
      this.data = [];
      this.event = "";
      return msg;
    }
    if (line[0] === ":") {
      if (this.onComment) this.onComment(line.slice(1).replace(/^ /, ""));
      return null;
    }
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value[0] === " ") value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.event = value;
    else if (field === "id" && !value.includes("\0")) this.lastEventId = value;
    else if (field === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
    return null;
  }
}

/** Reads an SSE body to its end, yielding messages. Returns normally when
 * the server ends the stream; throws when the connection breaks. */
export async function* readSSE(body, onComment) {
  const parser = new SSEParser(onComment);
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        yield* parser.feed(decoder.decode());
        finished = true;
        return;
      }
      yield* parser.feed(decoder.decode(value, { stream: true }));
    }
  } finally {
    if (!finished) reader.cancel().catch(() => {});
  }
}
