// What an approval card says about where the tool would run. A request
// the engine marked unsandboxed (approval:requested's `unsandboxed`: it
// may run outside the agent's sandbox once allowed) says so, and offers no
// "Always allow": the core asks each time and remembers nothing for it.

import { toolSummary } from "./transcript.js";

export function approvalQuestion(b) {
  const summary = toolSummary(b.toolName, b.input);
  const where = b.unsandboxed ? " (maybe outside its sandbox)" : "";
  return `${b.toolName} wants to run${where}${summary ? `: ${summary}` : ""}`;
}

export function offersAlways(b) {
  return !b.unsandboxed;
}
