package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/chirality/harness/claudecode"
)

func init() { register("version", runVersion) }

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("harness version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if code, ok := parseNoArgs(fs, "usage: harness version\n\nPrints the versions of harness, the pinned Claude Code CLI and Go.\n", args, stdout, stderr); !ok {
		return code
	}
	printVersion(stdout)
	return 0
}

// version is set at build time (-ldflags "-X main.version=v1.2.3");
// otherwise the module version or the VCS revision is used.
var version = ""

func harnessVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "devel-" + rev
}

func printVersion(w io.Writer) {
	fmt.Fprintf(w, "harness %s\nclaude code CLI %s (pinned, tested)\n%s %s/%s\n",
		harnessVersion(), claudecode.TestedCLIVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
