// Package notify calls a person when a session needs them or is done:
// it watches every event of a Harness (Harness.Watch, the core's one
// server-wide fan-out, whichever door started the turn) and sends a
// Notification to each configured sink.
//
// Triggers (Notification.Type):
//
//	approval:requested  a tool waits for a person's answer
//	trust:required      a project file waits to be trusted
//	plan:ready          an agent's plan waits for review (when an engine emits it)
//	turn:completed      a turn ended with a result
//	turn:failed         a turn ended with an error
//	turn:interrupted    a turn was interrupted or killed
//	budget:hit          a turn ended at its budget (max_budget)
//	session:idle        no turn started for Config.Idle after a turn ended
//
// Sinks: webhooks (a JSON POST of the Notification, signed with
// HMAC-SHA256 in X-Harness-Signature when a secret is set) and
// ntfy-compatible topics (a text POST with a Title header) and IRC
// channels (irc:// or ircs:// with TLS: one line per notification, from a
// client of package irc that stays connected). Each sink has
// its own bounded queue and worker: a full queue drops its oldest
// notification (counted), a failed delivery (network error, 429, 5xx) is
// retried with exponential backoff, and nothing a receiver does (hang,
// fail, vanish) reaches a turn: the Harness hands events to the notifier
// without ever waiting for it. Every payload goes through the secrets
// scrubber.
package notify
