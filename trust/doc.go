// Package trust keeps what a person granted, outside every project tree,
// so that nothing an agent can write widens what a session may do.
//
// An agent runs in a project: with file tools (and, if a person allowed
// it, Bash) it can write anything there, persona files
// (agents/AGENT_<ID>.md), session files (.chirality/sessions/<id>.json)
// and .mcp.json included. Those files keep their meaning (spec 004), but
// the grants in them count only as far as this record says a person
// accepted them:
//
//   - a session's "always" rules: only those recorded here, by a
//     person's answer, are honoured (the session file's rules list is a
//     copy, for display);
//   - a persona file's grants (tools, disallowed_tools,
//     auto_approve_tools, permission_mode, engine, mcp_servers, and the
//     budget max_cost_usd / max_tokens, which widens when raised or
//     removed): a file whose grants widened since a person last trusted
//     it runs with the trusted grants until a person trusts it again;
//   - a project .mcp.json server: it starts only once a person trusted
//     its name and the hash of its definition.
//
// The record is one JSON file per project in <stateDir>/trust/ (the
// harness state directory, $XDG_STATE_HOME/harness by default), keyed by
// the project root's absolute path. Writers in one process are serialised
// by a mutex, across processes by an flock on a lock file beside it;
// files are replaced atomically. A file that cannot be read as a record
// (corrupt, foreign, too large) trusts nothing: Load says why, and the
// next grant replaces it, keeping the old one as <file>.corrupt.
//
// A person who allows unrestricted Bash gives the agent the user's
// powers, this record's file included: the record protects against what
// file tools and granted commands can write inside the project.
package trust
