package logging

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"", 5, ""},
		{"hello", 5, "hello"},
		{"hello", 10, "hello"},
		{"hello!", 5, "hello…(+1 bytes)"},
		{"héllo wörld", 5, "héllo…(+7 bytes)"},
		{"世界世界", 4, "世界世界"}, // 12 bytes, 4 runes: not cut
		{"世界世界", 3, "世界世…(+3 bytes)"},
		{"abc", 0, "…(+3 bytes)"},
		{"abc", -1, "…(+3 bytes)"},
		{"a\xffb", 2, "a\xff…(+1 bytes)"},
	}
	for _, tt := range tests {
		if got := Truncate(tt.s, tt.n); got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if s == "" {
		return nil
	}
	if !strings.HasSuffix(s, "\n") {
		t.Fatalf("%s does not end with a newline", path)
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func TestRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "harness.log")
	w, err := OpenRotatingFile(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	write := func(s string) {
		t.Helper()
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	line := strings.Repeat("a", 39) + "\n" // 40 bytes
	write(line)
	write(line) // 80: fits
	if got := readLines(t, path+".1"); got != nil {
		t.Fatalf("rotated too early: %v", got)
	}
	write(strings.Repeat("b", 19) + "\n") // 100: exactly the limit, fits
	if got := readLines(t, path+".1"); got != nil {
		t.Fatal("rotated at exactly the limit")
	}
	write("c\n") // 102 > 100: rotate first
	if got := readLines(t, path+".1"); len(got) != 3 {
		t.Fatalf("harness.log.1 has %d lines, want 3", len(got))
	}
	if got := readLines(t, path); len(got) != 1 || got[0] != "c" {
		t.Fatalf("harness.log = %v, want [c]", got)
	}
	// A second rotation replaces harness.log.1: one old file kept.
	write(strings.Repeat("d", 99) + "\n")
	if got := readLines(t, path+".1"); len(got) != 1 || got[0] != "c" {
		t.Fatalf("after second rotation harness.log.1 = %v, want [c]", got)
	}
	// A write larger than the limit goes whole into a fresh file.
	write(strings.Repeat("e", 250) + "\n")
	if got := readLines(t, path); len(got) != 1 || len(got[0]) != 250 {
		t.Fatalf("oversized line not written whole to a fresh file")
	}
	matches, _ := filepath.Glob(path + "*")
	if len(matches) != 2 {
		t.Errorf("files %v, want harness.log and harness.log.1", matches)
	}
}

func TestRotationResumesSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "harness.log")
	if err := os.WriteFile(path, []byte(strings.Repeat("x", 90)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := OpenRotatingFile(path, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Write([]byte("0123456789\n")) // 91 + 11 > 100: the existing size counts
	if got := readLines(t, path); len(got) != 1 || got[0] != "0123456789" {
		t.Errorf("existing file size ignored after reopen: %v", got)
	}
}

func TestConcurrentWritesNeverSplitLines(t *testing.T) {
	dir := t.TempDir()
	log, closer, err := NewWithOptions(dir, Options{MaxSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				log.Info().Int("g", g).Int("i", i).Str("pad", strings.Repeat("p", i%50)).Msg("event")
			}
		}()
	}
	wg.Wait()
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	// Only the last two files survive; every line in them is whole JSON
	// and the current file holds the newest lines.
	for _, p := range []string{Path(dir), Path(dir) + ".1"} {
		lines := readLines(t, p)
		if len(lines) == 0 {
			t.Fatalf("%s is empty", p)
		}
		for _, l := range lines {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("%s: torn line %q: %v", p, l, err)
			}
			if m["event"] != "event" || m["timestamp"] == nil || m["level"] != "info" {
				t.Fatalf("unexpected entry %v", m)
			}
		}
		fi, _ := os.Stat(p)
		if fi.Size() > 4096 {
			t.Errorf("%s is %d bytes, over the limit", p, fi.Size())
		}
	}
}

func TestNewPermissionsAndClose(t *testing.T) {
	dir := t.TempDir()
	log, closer, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Str("k", "v").Msg("hello")
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	if err := closer.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := closer.(*RotatingFile).Write([]byte("x\n")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("write after close: err = %v", err)
	}
	// The logger drops a late line without zerolog's complaint on stderr
	// (issue 20 item 10: "zerolog: could not write event: file already
	// closed" at every SIGTERM with a live claude-acp session).
	var complaint error
	saved := zerolog.ErrorHandler
	zerolog.ErrorHandler = func(err error) { complaint = err }
	log.Info().Msg("late")
	zerolog.ErrorHandler = saved
	if complaint != nil {
		t.Errorf("a line after Close made zerolog complain: %v", complaint)
	}
	fi, err := os.Stat(Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v, want 0600", fi.Mode().Perm())
	}
	di, _ := os.Stat(filepath.Dir(Path(dir)))
	if di.Mode().Perm() != 0o700 {
		t.Errorf("log dir mode %v, want 0700", di.Mode().Perm())
	}
	f, _ := os.Open(Path(dir))
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() || !strings.Contains(sc.Text(), `"event":"hello"`) || !strings.Contains(sc.Text(), `"data":{"k":"v"}`) {
		t.Errorf("log line = %q", sc.Text())
	}
}

func TestNewFailsOnBadRoot(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	if _, _, err := New(file); err == nil {
		t.Error("New under a regular file succeeded")
	}
}

func ExampleTruncate() {
	fmt.Println(Truncate("list the files in the repository", 8))
	// Output: list the…(+24 bytes)
}
