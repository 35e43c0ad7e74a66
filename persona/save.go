package persona

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/chirality/harness/internal/atomicfile"
)

// PromptsDir is the directory, relative to a project root, where the prompt
// of each turn is saved.
const PromptsDir = ".chirality/prompts"

// PromptPath returns where SavePrompt writes the prompt of sessionID:
// <projectRoot>/.chirality/prompts/<sessionID>-system.txt. It does not
// validate sessionID; SavePrompt does.
func PromptPath(projectRoot, sessionID string) string {
	return filepath.Join(projectRoot, PromptsDir, sessionID+"-system.txt")
}

// SavePrompt writes prompt to PromptPath(projectRoot, sessionID), replacing
// the previous turn's file, and returns the path. sessionID must match
// ^[A-Za-z0-9_-]+$ (a UUID does). The write is atomic (temporary file in
// the same directory, fsync, rename): a reader sees the old or the new
// prompt, never a mix. The file is 0600 and missing directories are
// created 0700. Concurrent calls for one session leave one complete prompt.
func SavePrompt(projectRoot, sessionID, prompt string) (string, error) {
	if !ValidID(sessionID) {
		return "", fmt.Errorf("save prompt: invalid session id %q", sessionID)
	}
	path := PromptPath(projectRoot, sessionID)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("save prompt: %w", err)
	}
	if err := atomicfile.Write(path, []byte(prompt), nil); err != nil {
		return "", fmt.Errorf("save prompt: %w", err)
	}
	return path, nil
}
