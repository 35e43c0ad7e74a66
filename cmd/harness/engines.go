package main

import (
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/engines"
)

// buildEngines returns what a command hands the core: the built-in
// engines for c, then an engines file's ("" = none), which replace a
// built-in one of the same name. The file's errors wrap
// engines.ErrEngineFile.
func buildEngines(file string, c engines.Config) ([]engine.Engine, error) {
	extra, err := engines.Load(file, c)
	if err != nil {
		return nil, err
	}
	return append(engines.Builtin(c), extra...), nil
}
