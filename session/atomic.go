package session

import "github.com/chirality/harness/internal/atomicfile"

// testHookBeforeRename, when set by a test, runs after the temporary file
// is written and synced and before the rename; an error aborts the write
// the way a crash would at that point (the temporary file is left behind).
var testHookBeforeRename func(tmp string) error

// writeFileAtomic writes a 0600 file so that after a crash path holds
// either the old or the new content.
func writeFileAtomic(path string, data []byte) error {
	return atomicfile.Write(path, data, testHookBeforeRename)
}

// isTemp reports whether a directory entry name is one of our temporary
// files.
func isTemp(name string) bool { return atomicfile.IsTemp(name) }
