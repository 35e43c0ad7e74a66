// The console's usage view: what the sessions cost (GET /api/harness/usage)
// per day (a uPlot bar chart), per engine and per session, the tokens, and
// the rate-limit meters with their reset time; and the session header's
// spend against its budget. uPlot is vendored at build time by make
// (web/static/vendor/, from web/vendor's pinned package); without it the
// view shows its numbers as tables only.

const usd = (n) => `$${(n || 0).toFixed(4)}`;
const int = (n) => (n || 0).toLocaleString("en-US");

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c) e.append(c);
  return e;
}

let uplotLoad = null;
/** Loads the vendored uPlot once; resolves to it, or null when absent. */
function loadUPlot() {
  if (window.uPlot) return Promise.resolve(window.uPlot);
  uplotLoad ??= new Promise((resolve) => {
    const css = el("link", { rel: "stylesheet", href: "vendor/uPlot.min.css" });
    document.head.append(css);
    const s = el("script", { src: "vendor/uPlot.iife.min.js" });
    s.onload = () => resolve(window.uPlot || null);
    s.onerror = () => resolve(null);
    document.head.append(s);
  });
  return uplotLoad;
}

function table(head, rows) {
  const t = el("table", { class: "usage-table" });
  t.append(el("thead", {}, el("tr", {}, ...head.map((h) => el("th", { text: h })))));
  const body = el("tbody");
  for (const r of rows) body.append(el("tr", {}, ...r.map((c) => el("td", { text: String(c) }))));
  t.append(body);
  return t;
}

const tokensOf = (g) => (g.inputTokens || 0) + (g.outputTokens || 0) + (g.cacheReadTokens || 0) + (g.cacheWriteTokens || 0);

function groupRows(groups) {
  return groups.map((g) => [g.key, usd(g.costUsd), int(g.turns), int(g.inputTokens), int(g.outputTokens), int(g.cacheReadTokens + g.cacheWriteTokens)]);
}
const groupHead = (key) => [key, "cost", "turns", "input", "output", "cache"];

/** The rate-limit meters: one a limit, most used first. */
function meters(limits) {
  const box = el("div", { class: "usage-meters", "data-testid": "usage-meters" });
  if (!limits.length) box.append(el("p", { class: "hint", text: "No rate limit reported yet." }));
  const sorted = [...limits].sort((a, b) => (b.usedPercent ?? -1) - (a.usedPercent ?? -1));
  for (const l of sorted) {
    const known = l.usedPercent >= 0;
    const m = el("meter", { min: "0", max: "100", low: "60", high: "85", optimum: "0", value: String(known ? l.usedPercent : 0) });
    let text = `${l.engine ? l.engine + " " : ""}${l.limit}: ${known ? Math.round(l.usedPercent) + "% used" : "usage unknown"}`;
    if (l.status) text += ` (${l.status})`;
    if (l.resetsAt) text += `, resets ${new Date(l.resetsAt * 1000).toLocaleString()}`;
    box.append(el("div", { class: "usage-meter", "data-testid": "rate-limit", "data-limit": l.limit }, el("span", { text }), m));
  }
  return box;
}

/** Cost per day as bars (uPlot), days as x. */
async function costChart(container, days) {
  const uPlot = await loadUPlot();
  if (!uPlot || !days.length) return false;
  const xs = days.map((g) => Date.parse(g.key + "T00:00:00Z") / 1000);
  const ys = days.map((g) => g.costUsd);
  const width = Math.max(280, Math.min(container.clientWidth || 600, 900));
  const opts = {
    width,
    height: 220,
    title: "Cost per day (USD)",
    scales: { x: { time: true, range: (_u, min, max) => [min - 86400, max + 86400] }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
    series: [{}, { label: "cost", stroke: "#4a7dff", fill: "rgba(74,125,255,0.35)", width: 1, paths: uPlot.paths.bars({ size: [0.6, 60] }), value: (_u, v) => (v == null ? "" : usd(v)) }],
    axes: [{}, { values: (_u, vals) => vals.map((v) => "$" + v.toFixed(2)) }],
    legend: { show: true },
  };
  const holder = el("div", { class: "usage-chart", "data-testid": "usage-chart" });
  container.append(holder);
  new uPlot(opts, [xs, ys], holder);
  return true;
}

/** Fills the view with the reports. */
async function render(api, body, projectRoot) {
  body.replaceChildren(el("p", { class: "hint", text: "Loading…" }));
  const q = (by) => `usage?by=${by}` + (projectRoot ? `&projectRoot=${encodeURIComponent(projectRoot)}` : "");
  let byDay, byEngine, bySession;
  try {
    [byDay, byEngine, bySession] = await Promise.all([api.json("GET", q("day")), api.json("GET", q("engine")), api.json("GET", q("session"))]);
  } catch (e) {
    body.replaceChildren(el("p", { class: "form-error", role: "alert", text: String(e.message || e) }));
    return;
  }
  const t = byDay.total;
  body.replaceChildren(
    el("p", { class: "usage-total", "data-testid": "usage-total", text: `${usd(t.costUsd)} over ${int(t.turns)} turns · ${int(tokensOf(t))} tokens (${int(t.inputTokens)} in, ${int(t.outputTokens)} out, ${int(t.cacheReadTokens + t.cacheWriteTokens)} cache)` }),
    el("h3", { text: "Rate limits" }),
    meters(byDay.rateLimits || []),
  );
  const chartBox = el("div");
  body.append(chartBox);
  if (!(await costChart(chartBox, byDay.groups))) {
    chartBox.append(el("h3", { text: "Cost per day" }), table(groupHead("day"), groupRows(byDay.groups)));
  }
  const engines = table(groupHead("engine"), groupRows(byEngine.groups));
  engines.setAttribute("data-testid", "usage-engines");
  body.append(
    el("h3", { text: "Per engine" }),
    engines,
    el("h3", { text: "Per session" }),
    table(groupHead("session"), groupRows(bySession.groups.slice(0, 50))),
  );
}

/**
 * Adds the "Usage" button to the sidebar and its view.
 * @param {{json: (m: string, p: string) => Promise<any>}} api
 * @param {() => string} currentRoot  the current session's project root, or ""
 */
export function initUsage(api, currentRoot = () => "") {
  const dlg = el("dialog", { id: "usage-view", class: "usage-view", "data-testid": "usage-view" });
  const body = el("div", { class: "usage-body" });
  const close = el("button", { type: "button", class: "btn", text: "Close" });
  const scope = el("select", { "data-testid": "usage-scope" }, el("option", { value: "", text: "every project" }), el("option", { value: "project", text: "this project" }));
  close.addEventListener("click", () => dlg.close());
  scope.addEventListener("change", () => render(api, body, scope.value ? currentRoot() : ""));
  dlg.append(el("div", { class: "usage-head" }, el("h2", { text: "Usage" }), scope, close), body);
  document.body.append(dlg);
  const btn = el("button", { type: "button", id: "usage-btn", class: "btn ghost", "data-testid": "usage-button", text: "Usage" });
  btn.addEventListener("click", () => {
    dlg.showModal();
    render(api, body, scope.value ? currentRoot() : "");
  });
  document.querySelector(".sidebar-foot")?.prepend(btn);
}

/** The session header's spend against its budget, from GET /session/{id}. */
export function showSpend(env) {
  let span = document.getElementById("spend");
  if (!span) {
    span = el("span", { id: "spend", class: "badge spend", "data-testid": "session-spend" });
    document.getElementById("status")?.before(span);
  }
  const spent = env?.usage?.costUsd;
  const max = env?.budget?.maxCostUsd;
  if (spent == null && !max) {
    span.hidden = true;
    return;
  }
  span.hidden = false;
  span.textContent = max ? `${usd(spent)} of ${usd(max)}` : usd(spent);
  span.title = max ? "spent of the session's budget" : "spent by the session's turns";
  span.classList.toggle("over", !!max && spent >= max);
}
