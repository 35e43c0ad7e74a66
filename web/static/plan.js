// Plan review cards (issue 32): an agent ended a plan (plan:ready) and
// waits for a person. The card shows the plan as markdown and offers
// approve in default, approve in acceptEdits (the agent goes on; the
// session's next turns run in that mode), or revise with feedback (the
// agent keeps planning). The first decision from anywhere wins; the card
// then says what was decided (plan:resolved).

import { renderMarkdown } from "./markdown.js";

/** The transcript block of a plan:ready event. */
export function planBlock(ev) {
  return {
    planId: String(ev.planId ?? ""),
    plan: typeof ev.plan === "string" ? ev.plan : "",
    expiresAt: typeof ev.expiresAt === "string" ? ev.expiresAt : "",
    resolved: null,
  };
}

/** What a plan:resolved event says of its block. */
export function planResolution(ev) {
  return { decision: String(ev.decision ?? ""), mode: ev.mode ?? "", feedback: ev.feedback ?? "", by: String(ev.by ?? "") };
}

/** POST /session/{id}/plan; resolves to the HTTP status (200, or 409 when
 * no plan waits any more). */
export async function decidePlan(api, sessionId, decision) {
  const res = await api.request("POST", `session/${encodeURIComponent(sessionId)}/plan`, { body: decision, ok: [409] });
  return res.status;
}

/**
 * The card of block b. deps: {el, decide(decision) → Promise<status>,
 * toast(text, kind)}.
 */
export function planCard(b, deps) {
  const { el } = deps;
  const card = el("div", { class: "plan-card", "data-testid": "plan-card", role: "group", "aria-label": "Review the plan" });
  const head = el(
    "div",
    { class: "approval-head" },
    el("span", { class: "approval-icon", "aria-hidden": "true", text: "▤" }),
    el("span", { class: "plan-q", text: "The agent has a plan and waits for you" }),
  );
  const body = el("div", { class: "md plan-text", "data-testid": "plan-text" });
  const actions = el("div", { class: "approval-actions plan-actions" });
  const feedback = el("textarea", {
    class: "plan-feedback",
    "data-testid": "plan-feedback",
    rows: "3",
    placeholder: "What should change? (the agent keeps planning)",
    "aria-label": "Feedback for the agent",
  });
  const buttons = () => actions.querySelectorAll("button");
  const send = (decision) => async () => {
    if (decision.decision === "revise") {
      const text = feedback.value.trim();
      if (!text) {
        deps.toast("Say what should change first.", "info");
        feedback.focus();
        return;
      }
      decision = { ...decision, feedback: text };
    }
    for (const btn of buttons()) btn.disabled = true;
    try {
      const status = await deps.decide(decision);
      if (status === 409) deps.toast("This plan was already decided.", "info");
    } catch (e) {
      deps.toast(`Could not decide: ${e.message}`);
      for (const btn of buttons()) btn.disabled = false;
    }
  };
  actions.append(
    el("button", { type: "button", class: "btn primary", "data-testid": "plan-approve", text: "Approve", title: "Go on, asking before edits (default mode)", onclick: send({ decision: "approve", mode: "default" }) }),
    el("button", {
      type: "button",
      class: "btn",
      "data-testid": "plan-approve-edits",
      text: "Approve, accept edits",
      title: "Go on, editing files without asking (acceptEdits mode)",
      onclick: send({ decision: "approve", mode: "acceptEdits" }),
    }),
    feedback,
    el("button", { type: "button", class: "btn", "data-testid": "plan-revise", text: "Keep planning", title: "Send the feedback; the agent revises the plan", onclick: send({ decision: "revise" }) }),
  );
  const outcome = el("div", { class: "approval-outcome", "data-testid": "plan-outcome" });
  card.append(head, body, actions, outcome);
  return card;
}

/** Brings node up to date with b. */
export function updatePlanCard(b, node) {
  node.querySelector(".plan-text").innerHTML = renderMarkdown(b.plan); // escaped by renderMarkdown
  const actions = node.querySelector(".plan-actions");
  const outcome = node.querySelector(".approval-outcome");
  actions.hidden = !!b.resolved;
  node.classList.toggle("resolved", !!b.resolved);
  if (!b.resolved) {
    outcome.textContent = "";
    return;
  }
  const r = b.resolved;
  const who = { user: "by a person", timeout: "no answer in time", interrupt: "the turn was stopped", shutdown: "the server stopped" }[r.by] || r.by;
  outcome.textContent =
    r.decision === "approve" ? `Approved — goes on in ${r.mode || "default"} mode (${who})` : `Sent back to planning — ${who}${r.by === "user" && r.feedback ? `: “${r.feedback}”` : ""}`;
}
