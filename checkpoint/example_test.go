package checkpoint_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chirality/harness/checkpoint"
)

// A turn's file changes, previewed and undone.
func Example() {
	ctx := context.Background()
	root, _ := os.MkdirTemp("", "project")
	defer os.RemoveAll(root)
	os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n"), 0o644)

	s, err := checkpoint.Open(root, checkpoint.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	id, err := s.Snapshot(ctx) // before the turn
	if err != nil {
		fmt.Println(err)
		return
	}

	// The turn edits main.go and creates notes.md.
	os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	os.WriteFile(filepath.Join(root, "notes.md"), []byte("# notes\n"), 0o644)

	preview, _ := s.Diff(ctx, id)
	for _, c := range preview {
		fmt.Println(c.Op, c.Path)
	}
	if _, err := s.Restore(ctx, id); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := os.ReadFile(filepath.Join(root, "main.go"))
	_, err = os.Stat(filepath.Join(root, "notes.md"))
	fmt.Printf("%q %v\n", b, os.IsNotExist(err))
	// Output:
	// modified main.go
	// added notes.md
	// "package main\n" true
}
