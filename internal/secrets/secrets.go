// Package secrets decides which environment variables are credentials and
// keeps them from agents' child processes and from what the harness logs.
// Every engine with a child process (Claude Code, Codex, the ACP agents)
// builds the child's environment with FilterEnv and scrubs the child's
// output of SecretValues; the commands use IsSecretEnvName to keep
// secret values out of what they print. The rules live here once, so an
// engine and a door never disagree about what a secret is.
//
// The process's scrubber (Register, Scrub, ScrubJSON, ScrubLine; see
// scrub.go; Stream for text that arrives in pieces, stream.go) holds
// every secret value the harness has seen, and knows the key formats: FilterEnv
// registers what it withholds and the credentials it passes, and the
// core and the commands register their own. The core's event path and
// logging's writers scrub with it, so no event, stored event or log line
// carries one. CheckToken is the start-up check of every --token.
//
// The child runs tools on the user's machine, and anything it can read may
// reach the model; so an engine hands it the caller's environment minus
// anything that looks like a credential, then re-adds the credentials the
// agent itself needs (by name).
//
// # What scrubbing cannot catch
//
// Scrubbing replaces the exact bytes of a registered value (and text in
// the known key formats). A value the agent, a tool or the model has
// transformed is not that text and passes: reversed, base64-, hex- or
// URL-encoded, spaced out or split by other characters, in another case,
// compressed, hashed or encrypted, cut into pieces across separate
// events or tool calls, or described in words. So is a value shorter
// than 8 bytes (not scrubbed at all), and one the harness never saw (a
// credential an agent reads from a file). An agent that can read a
// secret can get it out in such a form; scrubbing keeps secrets out of
// logs and events by accident, it is no barrier against an agent that
// tries. The barrier is that the child never gets them: FilterEnv's
// rules, MCP servers' values written only to private files outside the
// project (package internal/rundir), and the permission checks.
package secrets

import (
	"strings"

	"github.com/chirality/harness/internal/lazyre"
)

// What is withheld, by name. Names are compared in upper case and split
// into words at '_', '-' and '.': GH_PAT is the words GH and PAT.
//
//   - secretParts are withheld wherever they occur in a name, inside a
//     word too: PGPASSWORD, MY_PASSWD, AWS_SECRET_ACCESS_KEY, SLACK_WEBHOOK_URL.
//   - secretWords are withheld only as a whole word (as substrings they
//     are parts of ordinary names: PATH holds PAT, AUTHOR holds AUTH,
//     KEYBOARD holds KEY, TOKENIZER holds TOKEN): API_KEYS, NPM_AUTH,
//     GH_PAT, GITHUB_TOKEN, APP_SESSION, SENTRY_DSN.
//   - secretNames are whole names: URLs that usually carry a password.
//   - harmlessNames are never withheld although a word matches: what a
//     terminal, a desktop session or ssh-agent set, which agents' tools
//     need and which hold no secret.
var (
	secretParts = []string{"PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "CREDENTIAL", "APIKEY",
		"ACCESSKEY", "PRIVATEKEY", "AUTHTOKEN", "ACCESSTOKEN", "WEBHOOK"}
	secretWords = []string{"PASS", "TOKEN", "TOKENS", "KEY", "KEYS", "PAT", "AUTH", "OAUTH", "BEARER",
		"CREDS", "PRIVATE", "DSN", "SESSION", "COOKIE", "COOKIES", "JWT"}
	secretNames   = []string{"DATABASE_URL", "REDIS_URL", "MONGODB_URI", "MONGO_URL", "AMQP_URL"}
	harmlessNames = []string{"PATH", "TERM_SESSION_ID", "XDG_SESSION_ID", "XDG_SESSION_TYPE",
		"XDG_SESSION_CLASS", "XDG_SESSION_DESKTOP", "XDG_SESSION_PATH", "DESKTOP_SESSION",
		"DBUS_SESSION_BUS_ADDRESS", "SESSION_MANAGER", "ZELLIJ_SESSION_NAME", "SSH_AUTH_SOCK",
		"PASSWORD_STORE_DIR"}
)

// secretValue matches values in a known credential format, whatever the
// variable is called: Anthropic and OpenAI keys, GitHub tokens (classic
// and fine-grained), GitLab and npm tokens, Slack tokens, AWS access key
// ids, PEM private keys, and URLs with a password (scheme://user:pass@).
var secretValue = lazyre.New(`^(sk-ant-[A-Za-z0-9_-]{8,}|sk-proj-[A-Za-z0-9_-]{16,}|` +
	`gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{16,}|npm_[A-Za-z0-9]{30,}|` +
	`xox[abprs]-[A-Za-z0-9-]{10,}|(AKIA|ASIA)[A-Z0-9]{16}|-----BEGIN [A-Z ]*PRIVATE KEY-----)` +
	`|^[a-zA-Z][a-zA-Z0-9+.-]*://[^/@\s:]*:[^/@\s]+@`)

// DefaultAllowedEnv are re-added after filtering: the Claude Code CLI
// needs its key.
var DefaultAllowedEnv = []string{"ANTHROPIC_API_KEY"}

// SecretValues returns the non-empty values of env's secret-looking
// variables (IsSecretEnv): what a child's output is scrubbed of.
func SecretValues(env []string) []string {
	var out []string
	for _, kv := range env {
		name, v, ok := strings.Cut(kv, "=")
		if ok && v != "" && IsSecretEnv(name, v) {
			out = append(out, v)
		}
	}
	return out
}

// IsSecretEnvName reports whether a variable of this name is withheld from
// the child unless allowed by name (see secretParts, secretWords,
// secretNames and harmlessNames above; case is ignored).
func IsSecretEnvName(name string) bool {
	upper := strings.ToUpper(name)
	for _, n := range harmlessNames {
		if upper == n {
			return false
		}
	}
	for _, n := range secretNames {
		if upper == n {
			return true
		}
	}
	for _, p := range secretParts {
		if strings.Contains(upper, p) {
			return true
		}
	}
	for _, w := range strings.FieldsFunc(upper, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		for _, sw := range secretWords {
			if w == sw {
				return true
			}
		}
	}
	return false
}

// IsSecretValue reports whether value looks like a credential in a known
// format (see secretValue), whatever its variable is called.
func IsSecretValue(value string) bool { return secretValue.MatchString(value) }

// IsSecretEnv reports whether the variable name=value is withheld from
// the child unless allowed by name: a secret-looking name or a value in a
// known credential format. A harmless name (PATH…) is never withheld.
func IsSecretEnv(name, value string) bool {
	if IsSecretEnvName(name) {
		return true
	}
	upper := strings.ToUpper(name)
	for _, n := range harmlessNames {
		if upper == n {
			return false
		}
	}
	return IsSecretValue(value)
}

// FilterEnv returns env (KEY=VALUE entries) without secret-looking
// variables (IsSecretEnv: by name or by value) and without CLAUDECODE (set inside a Claude Code session, it
// would make the child think it is nested), keeping the names in allow
// (exact, case-sensitive) and ANTHROPIC_API_KEY. Order is kept; a later
// duplicate of a name wins, as in os/exec. Every secret value it sees,
// withheld or allowed, is registered with the process's scrubber
// (Register), so no log or event the harness writes carries it.
func FilterEnv(env []string, allow []string) []string {
	allowed := make(map[string]bool, len(allow)+len(DefaultAllowedEnv))
	for _, n := range DefaultAllowedEnv {
		allowed[n] = true
	}
	for _, n := range allow {
		allowed[n] = true
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if name == "CLAUDECODE" {
			continue
		}
		if value != "" && IsSecretEnv(name, value) {
			Register(value) // withheld or an agent's own credential: never logged
			if !allowed[name] {
				continue
			}
		}
		out = append(out, kv)
	}
	return out
}

// WithheldEnvValues returns the values FilterEnv would withhold from env,
// so logs and errors can scrub them.
func WithheldEnvValues(env []string) []string {
	var out []string
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if ok && value != "" && (IsSecretEnv(name, value) || name == "ANTHROPIC_API_KEY") {
			out = append(out, value)
		}
	}
	return out
}
