// Way 1: a rewrite. The browser calls /api/harness/* on the Next.js origin
// and Next.js forwards it to the gateway unchanged — REST and SSE alike, so
// the console-style client code needs no base URL. Use this when the
// gateway has no token, or when the browser itself holds one (it then sends
// `Authorization: Bearer …`, which the rewrite passes through).
//
// Way 2 (token kept on the server) is the route handler in
// app/proxy/api/harness/[...path]/route.ts.

const gateway = process.env.HARNESS_URL ?? "http://127.0.0.1:7878";

/** @type {import('next').NextConfig} */
const nextConfig = {
  async rewrites() {
    return [{ source: "/api/harness/:path*", destination: `${gateway}/api/harness/:path*` }];
  },
  // Do not compress: gzip would buffer the event streams.
  compress: false,
};

export default nextConfig;
