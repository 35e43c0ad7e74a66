// A client of `harness rpc`: JSON-RPC 2.0 over a child's stdin/stdout,
// newline-delimited (vscode-jsonrpc reads only Content-Length framing).

import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

export interface RpcNotification {
  method: string;
  params: Record<string, unknown>;
}

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = "RpcError";
  }
}

/** One `harness rpc` child and the JSON-RPC conversation with it. */
export class HarnessRpc {
  private nextId = 1;
  private pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private listeners = new Set<(n: RpcNotification) => void>();
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;

  /** Starts `bin rpc ...args`; stderr is passed to onStderr (or dropped). */
  constructor(bin: string, args: string[], onStderr?: (s: string) => void) {
    this.child = spawn(bin, ["rpc", ...args], { stdio: ["pipe", "pipe", "pipe"] });
    this.child.stderr!.on("data", (b: Buffer) => onStderr?.(b.toString()));
    this.exited = new Promise((r) => this.child.once("exit", (code) => r(code)));
    const lines = createInterface({ input: this.child.stdout!, crlfDelay: Infinity });
    lines.on("line", (line) => this.onLine(line));
    this.exited.then(() => {
      for (const p of this.pending.values()) p.reject(new Error("harness rpc exited"));
      this.pending.clear();
    });
  }

  private onLine(line: string): void {
    let msg: { id?: number; method?: string; params?: Record<string, unknown>; result?: unknown; error?: { code: number; message: string } };
    try {
      msg = JSON.parse(line);
    } catch {
      return; // stdout carries only JSON-RPC; nothing else is expected
    }
    if (msg.method) {
      for (const l of this.listeners) l({ method: msg.method, params: msg.params ?? {} });
      return;
    }
    if (typeof msg.id === "number") {
      const p = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      if (!p) return;
      if (msg.error) p.reject(new RpcError(msg.error.code, msg.error.message));
      else p.resolve(msg.result);
    }
  }

  /** Sends a request and resolves to its result (rejects with RpcError). */
  call<T = Record<string, unknown>>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.stdin!.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    });
  }

  /** Calls fn for every notification until the returned function is called. */
  onNotification(fn: (n: RpcNotification) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Ends the input: the server cancels running turns and exits 0. */
  async close(): Promise<number | null> {
    this.child.stdin!.end();
    return this.exited;
  }
}
