package sandbox_test

import (
	"os/exec"
	"testing"

	"github.com/chirality/harness/sandbox"
)

// BenchmarkStart is the sandbox's cost at a child's start: /bin/true run
// directly, and through the entry (a re-exec of the test binary, the
// ruleset built from the workdir's entries and applied, then execve),
// writes only or writes and TCP (two ports).
func BenchmarkStart(b *testing.B) {
	wd, _ := project(b)
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sandboxed", func(b *testing.B) { benchWrapped(b, sandbox.Spec{Workdir: wd}) })
	b.Run("sandboxed-net", func(b *testing.B) {
		benchWrapped(b, sandbox.Spec{Workdir: wd, Net: &sandbox.Net{Connect: []uint16{443, 8080}}})
	})
}

func benchWrapped(b *testing.B, spec sandbox.Spec) {
	for b.Loop() {
		c, err := sandbox.Wrap(spec, []string{"/bin/true"})
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
		cmd.Env = c.Env
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
	}
}
