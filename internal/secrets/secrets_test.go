package secrets_test

import (
	"fmt"
	"slices"
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
