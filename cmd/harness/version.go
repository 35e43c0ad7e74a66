package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/chirality/harness/claudecode"
)

func (c *cli) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the versions of harness, the pinned Claude CLI and Go",
		Long:  "usage: harness version\n\nPrints the versions of harness, the pinned Claude Code CLI and Go.\n",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprint(c.stdout, versionText())
			return nil
		},
	}
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

// versionText is what `harness version` and `harness --version` print.
func versionText() string {
	return fmt.Sprintf("harness %s\nclaude code CLI %s (pinned, tested)\n%s %s/%s\n",
		harnessVersion(), claudecode.TestedCLIVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
