// A server-sent-events reader over fetch. EventSource cannot POST or send an
// Authorization header, so the client reads `text/event-stream` bodies
// itself, following the parsing rules of the HTML standard's SSE section.

/** One dispatched SSE message. */
export interface SSEMessage {
  /** The `event:` field; "message" when absent. */
  event: string;
  /** The `data:` lines joined with "\n". */
  data: string;
  /** The last event id seen so far on the stream (the `id:` field persists
   * across messages, as in the standard); "" when none was sent. */
  id: string;
  /** The `retry:` field, in milliseconds, when this message set one. */
  retry?: number;
}

/**
 * An incremental SSE parser: feed it text as it arrives, in chunks cut
 * anywhere (even between "\r" and "\n"), and it returns the messages that
 * became complete. Comment lines (": heartbeat") are reported to onComment.
 */
export class SSEParser {
  private buf = "";
  private data: string[] = [];
  private event = "";
  private retry: number | undefined;
  private sawBOM = false;
  /** The stream's last event id, kept across messages. */
  lastEventId = "";

  constructor(private readonly onComment?: (text: string) => void) {}

  /** Adds text and returns every message it completed. */
  feed(chunk: string): SSEMessage[] {
    if (!this.sawBOM) {
      if (this.buf === "" && chunk === "") return [];
      this.sawBOM = true;
      if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
    }
    this.buf += chunk;
    const out: SSEMessage[] = [];
    let start = 0;
    for (;;) {
      const nl = this.findLineEnd(start);
      if (nl === null) break;
      const line = this.buf.slice(start, nl.at);
      start = nl.at + nl.len;
      const msg = this.line(line);
      if (msg) out.push(msg);
    }
    this.buf = this.buf.slice(start);
    return out;
  }

  /** Ends the stream. Per the standard, a message not yet ended by a blank
   * line is dropped. */
  end(): void {
    this.buf = "";
    this.data = [];
    this.event = "";
    this.retry = undefined;
  }

  private findLineEnd(from: number): { at: number; len: number } | null {
    for (let i = from; i < this.buf.length; i++) {
      const c = this.buf.charCodeAt(i);
      if (c === 10) return { at: i, len: 1 };
      if (c === 13) {
        // "\r" at the end of what we have: "\n" may follow in the next chunk.
        if (i + 1 >= this.buf.length) return null;
        return { at: i, len: this.buf.charCodeAt(i + 1) === 10 ? 2 : 1 };
      }
    }
    return null;
  }

  private line(line: string): SSEMessage | null {
    if (line === "") return this.dispatch();
    if (line.charCodeAt(0) === 58 /* : */) {
      this.onComment?.(line.slice(1).replace(/^ /, ""));
      return null;
    }
    const colon = line.indexOf(":");
    let field: string;
    let value: string;
    if (colon === -1) {
      field = line;
      value = "";
    } else {
      field = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value.charCodeAt(0) === 32) value = value.slice(1);
    }
    switch (field) {
      case "data":
        this.data.push(value);
        break;
      case "event":
        this.event = value;
        break;
      case "id":
        if (!value.includes("\0")) this.lastEventId = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.retry = Number(value);
        break;
      default:
        // Unknown fields are ignored.
        break;
    }
    return null;
  }

  private dispatch(): SSEMessage | null {
    const retry = this.retry;
    this.retry = undefined;
    if (this.data.length === 0) {
      this.event = "";
      return null;
    }
    const msg: SSEMessage = {
      event: this.event || "message",
      data: this.data.join("\n"),
      id: this.lastEventId,
    };
    if (retry !== undefined) msg.retry = retry;
    this.data = [];
    this.event = "";
    return msg;
  }
}

/**
 * Reads an SSE body to its end, yielding each message. It ends normally when
 * the server closes the stream, and throws when the connection fails (or
 * the signal aborts it). Cancelling the iteration (break) cancels the body.
 */
export async function* readSSE(
  body: ReadableStream<Uint8Array>,
  opts: { onComment?: (text: string) => void } = {},
): AsyncGenerator<SSEMessage, void, undefined> {
  const parser = new SSEParser(opts.onComment);
  const decoder = new TextDecoder("utf-8");
  const reader = body.getReader();
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        for (const m of parser.feed(decoder.decode())) yield m;
        parser.end();
        finished = true;
        return;
      }
      for (const m of parser.feed(decoder.decode(value, { stream: true }))) yield m;
    }
  } finally {
    if (!finished) {
      // Stopped early (break, throw or abort): release the connection.
      await reader.cancel().catch(() => {});
    }
    reader.releaseLock();
  }
}
