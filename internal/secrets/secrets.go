// Package secrets decides which environment variables are credentials and
// keeps them from agents' child processes and from what the harness logs.
// Every engine with a child process (Claude Code, Codex, the ACP agents)
// builds the child's environment with FilterEnv and scrubs the child's
// output of SecretValues; the commands use IsSecretEnvName to keep
// secret values out of what they print. The rules live here once, so an
// engine and a door never disagree about what a secret is.
//
// The child runs tools on the user's machine, and anything it can read may
// reach the model; so an engine hands it the caller's environment minus
// anything that looks like a credential, then re-adds the credentials the
// agent itself needs (by name).
package secrets

import "strings"

// secretSuffixes and secretNames decide what is withheld. Matching ignores
// case: a lower-case github_token is still a token.
var (
	secretSuffixes = []string{"_SECRET", "_PASSWORD", "_CREDENTIAL", "_CREDENTIALS", "_KEY", "_TOKEN", "_API_KEY"}
	secretNames    = []string{"DATABASE_URL", "REDIS_URL"}
)

// DefaultAllowedEnv are re-added after filtering: the Claude Code CLI
// needs its key.
var DefaultAllowedEnv = []string{"ANTHROPIC_API_KEY"}

// SecretValues returns the non-empty values of env's secret-looking
// variables (IsSecretEnvName): what a child's output is scrubbed of.
func SecretValues(env []string) []string {
	var out []string
	for _, kv := range env {
		name, v, ok := strings.Cut(kv, "=")
		if ok && v != "" && IsSecretEnvName(name) {
			out = append(out, v)
		}
	}
	return out
}

// IsSecretEnvName reports whether a variable of this name is withheld from
// the child unless allowed by name.
func IsSecretEnvName(name string) bool {
	upper := strings.ToUpper(name)
	for _, s := range secretSuffixes {
		if strings.HasSuffix(upper, s) {
			return true
		}
	}
	for _, n := range secretNames {
		if upper == n {
			return true
		}
	}
	return false
}

// FilterEnv returns env (KEY=VALUE entries) without secret-looking
// variables and without CLAUDECODE (set inside a Claude Code session, it
// would make the child think it is nested), keeping the names in allow
// (exact, case-sensitive) and ANTHROPIC_API_KEY. Order is kept; a later
// duplicate of a name wins, as in os/exec.
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
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if name == "CLAUDECODE" {
			continue
		}
		if IsSecretEnvName(name) && !allowed[name] {
			continue
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
		if ok && value != "" && (IsSecretEnvName(name) || name == "ANTHROPIC_API_KEY") {
			out = append(out, value)
		}
	}
	return out
}
