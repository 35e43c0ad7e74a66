package acp

// SetTap makes e hand every byte written to ("out") and read from ("in")
// its agents to f. Set it before the first turn.
func SetTap(e *Engine, f func(dir string, b []byte)) { e.tap = f }
