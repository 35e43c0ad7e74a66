//go:build unix

package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDir(t *testing.T) {
	run := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", run)
	d, err := Dir()
	if err != nil || d != filepath.Join(run, "harness") {
		t.Fatalf("Dir() = %q, %v", d, err)
	}
	fi, err := os.Stat(d)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode %v (%v), want 0700", fi.Mode(), err)
	}
	// opened to others (by hand): closed again
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Dir(); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(d); fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode %v after Dir, want 0700", fi.Mode())
	}
}

func TestDirRefusesASymlink(t *testing.T) {
	run := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", run)
	// planted: the runtime dir points at a directory someone else reads
	if err := os.Symlink(t.TempDir(), filepath.Join(run, "harness")); err != nil {
		t.Fatal(err)
	}
	if d, err := Dir(); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("Dir() = %q, %v: a symlinked runtime dir must be refused", d, err)
	}
}

func TestDirWithoutXDG(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	d, err := Dir()
	if err != nil || filepath.Dir(d) != tmp || !strings.HasPrefix(filepath.Base(d), "harness-") {
		t.Fatalf("Dir() = %q, %v", d, err)
	}
}
