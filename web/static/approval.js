// What an approval card says about where the tool would run. A request
// the engine marked unsandboxed (approval:requested's `unsandboxed`: it
// may run outside the agent's sandbox once allowed) says so, and offers no
// "Always allow": the core asks each time and remembers nothing for it.

import { toolSummary } from "./transcript.js";

export function approvalQuestion(b) {
  const summary = toolSummary(b.toolName, b.input);
  const where = b.unsandboxed ? " (maybe outside its sandbox)" : "";
  // what a marked request asks for beyond the use (Codex: the host a
  // command would reach, a root a file change would write under)
  const str = (k) => (b.input && typeof b.input[k] === "string" ? b.input[k] : "");
  const more = (str("host") ? `, reaching ${str("host")}` : "") + (str("grantRoot") ? `, and writes under ${str("grantRoot")} for the session` : "");
  return `${b.toolName} wants to run${where}${summary ? `: ${summary}` : ""}${more}`;
}

export function offersAlways(b) {
  return !b.unsandboxed;
}
