package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWholeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.json")
	if err := Write(path, []byte("old"), nil); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	st, _ := os.Stat(path)
	if err != nil || string(b) != "new" || st.Mode().Perm() != 0o600 {
		t.Fatalf("content %q, mode %v, err %v", b, st.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

func TestCrashBeforeRenameKeepsOldContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.json")
	if err := Write(path, []byte("old"), nil); err != nil {
		t.Fatal(err)
	}
	crash := errors.New("crash")
	var leftover string
	err := Write(path, []byte("new"), func(tmp string) error { leftover = tmp; return crash })
	if !errors.Is(err, crash) {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("content after a crash = %q, want the old one", b)
	}
	if !IsTemp(filepath.Base(leftover)) {
		t.Errorf("leftover %q is not recognisable as a temporary file", leftover)
	}
}
