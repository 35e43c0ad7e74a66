// Way 1: a rewrite. The browser calls /api/harness/* on the Next.js origin
// and Next.js forwards it to the gateway unchanged — REST and SSE alike, so
// the client needs no base URL (`new HarnessClient({ baseUrl: "" })`). Use
// it when the gateway has no token, or when the browser itself holds one
// (it then sends `Authorization: Bearer …`, which the rewrite passes on).
// The rewrite also passes the browser's Origin on: start the gateway with
// `--allow-origin` naming this app's origin, or it refuses the request.
// Rewrites are fixed at build time: set HARNESS_URL when running
// `next build` (and `next dev`).
//
// Way 2 (token kept on the server, no --allow-origin needed) is the route
// handler in app/proxy/api/harness/[...path]/route.ts; the page uses it.

import path from "node:path";
import { fileURLToPath } from "node:url";

const gateway = (process.env.HARNESS_URL ?? "http://127.0.0.1:7878").replace(/\/+$/, "");

// The client is a `file:` dependency, a symlink to ../../clients/typescript.
// Turbopack resolves nothing outside its root, so the root is the
// repository (the first directory holding both this app and the client).
// In your own app, with the client installed from npm or a tarball, drop
// these two lines.
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

/** @type {import('next').NextConfig} */
const nextConfig = {
  turbopack: { root: repo },
  outputFileTracingRoot: repo,
  async rewrites() {
    return [{ source: "/api/harness/:path*", destination: `${gateway}/api/harness/:path*` }];
  },
  // Do not compress: gzip would buffer the event streams.
  compress: false,
};

export default nextConfig;
