package secrets_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chirality/harness/internal/secrets"
)

func TestFilterEnv(t *testing.T) {
	env := []string{
		"PATH=/bin", "HOME=/h", "ANTHROPIC_API_KEY=keep", "ANTHROPIC_AUTH_TOKEN=allowed",
		"MY_SECRET=x", "DB_PASSWORD=x", "GCP_CREDENTIAL=x", "AWS_SECRET_ACCESS_KEY=x", "github_token=x",
		"OPENAI_API_KEY=x", "DATABASE_URL=x", "REDIS_URL=x", "CLAUDECODE=1", "KEYBOARD=us", "TOKENIZER=x", "=odd", "noequals",
	}
	got := secrets.FilterEnv(env, []string{"ANTHROPIC_AUTH_TOKEN"})
	want := []string{"PATH=/bin", "HOME=/h", "ANTHROPIC_API_KEY=keep", "ANTHROPIC_AUTH_TOKEN=allowed", "KEYBOARD=us", "TOKENIZER=x"}
	if !slices.Equal(got, want) {
		t.Errorf("FilterEnv:\n got %q\nwant %q", got, want)
	}
	if !secrets.IsSecretEnvName("x_Api_Key") || secrets.IsSecretEnvName("MONKEY") {
		t.Error("IsSecretEnvName matches by suffix with an underscore, ignoring case")
	}
}

func TestSecretValues(t *testing.T) {
	env := []string{"OPENAI_API_KEY=sk-abcdef", "PATH=/usr/bin", "CODEX_API_KEY=xyz", "EMPTY_TOKEN=", "ANTHROPIC_API_KEY=sk-ant"}
	if got, want := secrets.SecretValues(env), []string{"sk-abcdef", "xyz", "sk-ant"}; !slices.Equal(got, want) {
		t.Errorf("SecretValues = %q, want %q", got, want)
	}
	if got, want := secrets.WithheldEnvValues([]string{"PATH=/x", "GITHUB_TOKEN=ghp", "ANTHROPIC_API_KEY=k"}), []string{"ghp", "k"}; !slices.Equal(got, want) {
		t.Errorf("WithheldEnvValues = %q, want %q", got, want)
	}
}

func ExampleFilterEnv() {
	env := []string{"PATH=/usr/bin", "GITHUB_TOKEN=ghp_x", "ANTHROPIC_API_KEY=sk-ant-x", "DATABASE_URL=postgres://", "CLAUDECODE=1"}
	fmt.Println(secrets.FilterEnv(env, nil))
	// Output: [PATH=/usr/bin ANTHROPIC_API_KEY=sk-ant-x]
}

// Issue 24.7: names are matched by word, not by suffix only, and values
// in a known credential format are withheld whatever their name.
func TestSecretNamesByWord(t *testing.T) {
	for _, name := range []string{"PGPASSWORD", "MY_PASSWD", "GH_PAT", "SECRET", "API_KEYS", "NPM_AUTH",
		"SLACK_WEBHOOK_URL", "my_pass", "APP_SESSION", "SENTRY_DSN", "COOKIE", "PRIVATE_KEY_FILE", "GITHUB_TOKEN",
		"AWS_ACCESS_KEY_ID", "NGROK_AUTHTOKEN", "SIGNING_PASSPHRASE", "DB_CREDS", "MONGODB_URI", "x-api-key"} {
		if !secrets.IsSecretEnvName(name) {
			t.Errorf("%s is not withheld", name)
		}
	}
	for _, name := range []string{"PATH", "TERM_SESSION_ID", "XDG_SESSION_ID", "DBUS_SESSION_BUS_ADDRESS", "SSH_AUTH_SOCK",
		"AUTHOR", "KEYBOARD", "MONKEY", "TOKENIZERS_PARALLELISM", "PASSENGER", "MANPATH", "LD_LIBRARY_PATH", "HOME",
		"LANG", "GIT_ASKPASS", "XAUTHORITY", "PASSWORD_STORE_DIR", "COMPASS"} {
		if secrets.IsSecretEnvName(name) {
			t.Errorf("%s is withheld", name)
		}
	}
	for _, v := range []string{"sk-ant-api03-abcdefghijklmnop", "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
		"github_pat_11ABCDEFG0123456789_abcdefghijkl", "xoxb-1234567890-abcdefghij", "xoxp-1234567890-abcdefghij",
		"AKIAIOSFODNN7EXAMPLE", "postgres://app:hunter2@db.internal:5432/app", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl"} {
		if !secrets.IsSecretValue(v) {
			t.Errorf("value %.20s… is not recognised", v)
		}
		if got := secrets.FilterEnv([]string{"HARMLESS_LOOKING=" + v, "PATH=/bin"}, nil); !slices.Equal(got, []string{"PATH=/bin"}) {
			t.Errorf("a variable holding %.20s… reached the child: %q", v, got)
		}
	}
	for _, v := range []string{"/usr/bin", "en_US.UTF-8", "https://example.com/a@b", "skeleton", "ghp_short", "xterm-256color"} {
		if secrets.IsSecretValue(v) {
			t.Errorf("ordinary value %q is taken for a secret", v)
		}
	}
	// An engine's own credential passes by name even in a known format.
	if got := secrets.FilterEnv([]string{"ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnop"}, nil); len(got) != 1 {
		t.Errorf("the engine's key was withheld: %q", got)
	}
}

func TestScrub(t *testing.T) {
	const key = "sk-ant-scrub-test-0123456789"
	const nkey = "npm_scrubtest0123456789abcdefghijklmnop"
	secrets.FilterEnv([]string{"ANTHROPIC_API_KEY=" + key, "NPM_TOKEN=" + nkey, "SHORT_TOKEN=abc"}, nil)
	if got := secrets.Scrub("key " + key + " end"); got != "key [REDACTED] end" {
		t.Errorf("Scrub = %q", got)
	}
	if got := secrets.Scrub("abc"); got != "abc" {
		t.Errorf("a short value was scrubbed: %q", got)
	}
	for _, in := range []string{
		`{"type":"tool:result","content":"ANTHROPIC_API_KEY=` + key + `\nPATH=/bin","n":12}`,
		`{"text":"a line\n` + nkey + `","` + key + `":true}`, // after an escape, and as a key
		`{"text":"\u003c` + key + `\u003e"}`,
	} {
		out := secrets.ScrubJSON([]byte(in))
		if strings.Contains(string(out), key) || strings.Contains(string(out), nkey) || !strings.Contains(string(out), secrets.Redacted) {
			t.Errorf("ScrubJSON(%s) = %s", in, out)
		}
		if !json.Valid(out) {
			t.Errorf("ScrubJSON made invalid JSON: %s", out)
		}
	}
	plain := []byte(`{"seq":1,"text":"nothing here"}`)
	if out := secrets.ScrubJSON(plain); &out[0] != &plain[0] {
		t.Error("ScrubJSON copied a line it did not change")
	}
	if got := string(secrets.ScrubLine([]byte("12:00 INF session:init key=" + key + "\n"))); strings.Contains(got, key) {
		t.Errorf("ScrubLine (console) = %q", got)
	}
}

func FuzzScrubJSON(f *testing.F) {
	secrets.Register("n-fuzz-secret-value", `quo"te-secret`)
	f.Add([]byte(`{"a":"x\nn-fuzz-secret-value","b":[1,"quo\"te-secret"]}`))
	f.Add([]byte(`"unterminated n-fuzz-secret-value`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := secrets.ScrubJSON(b)
		if json.Valid(b) && !json.Valid(out) {
			t.Fatalf("valid %q became invalid %q", b, out)
		}
	})
}
