package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/persona"
)

// The flags several commands take, each declared here once: its name,
// its kind, the help every command shares and its completion. A command
// adds what is its own to the help (what the flag does there, its
// default).

// claudeBinHelp documents the one search for the claude CLI, used by
// every command.
const claudeBinHelp = "claude executable (default: $HARNESS_CLAUDE_BIN, then claude on PATH, then ./node_modules/.bin/claude, then node_modules/.bin/claude beside this harness binary)"

// demoHelp is the help of every --demo flag: what the demo model is, and
// that its failure needs an explicit command (ordinary words never fail).
const demoHelp = `answer with the built-in demo model (no account or key needed; every engine runs on it offline, nothing leaves this machine); the message "/demo error" makes it fail the turn with an API error`

// engineNames lists the built-in engines and their aliases for a help
// text: "claude-code (claude, claudecode), anthropic (native), …".
func engineNames() string {
	var parts []string
	for _, n := range engines.Names {
		var aliases []string
		for a, to := range engines.Aliases {
			if to == n {
				aliases = append(aliases, a)
			}
		}
		if len(aliases) > 0 {
			slices.Sort(aliases)
			n += " (" + strings.Join(aliases, ", ") + ")"
		}
		parts = append(parts, n)
	}
	return strings.Join(parts, ", ")
}

func completeWords(words ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(words, cobra.ShellCompDirectiveNoFileComp)
}

func completeDirs(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveFilterDirs
}

func completeYAML(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

// --engine: what engine runs (the built-in names and their aliases, or
// an engines file's entry where the command has --engines).
func flagEngine(cmd *cobra.Command, p *string, def, help string) {
	cmd.Flags().StringVar(p, "engine", def, help+" (built in: "+engineNames()+")")
	names := append([]string{}, engines.Names...)
	for a := range engines.Aliases {
		names = append(names, a)
	}
	slices.Sort(names[len(engines.Names):])
	_ = cmd.RegisterFlagCompletionFunc("engine", completeWords(names...))
}

// --engines: a YAML file of engine entries.
func flagEngines(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "engines", "", engines.FileHelp)
	_ = cmd.RegisterFlagCompletionFunc("engines", completeYAML)
}

// --claude-bin: the Claude Code CLI.
func flagClaudeBin(cmd *cobra.Command, p *string, note string) {
	cmd.Flags().StringVar(p, "claude-bin", "", claudeBinHelp+note)
}

// --demo: the built-in demo model.
func flagDemo(cmd *cobra.Command, p *bool) { cmd.Flags().BoolVar(p, "demo", false, demoHelp) }

// -v, --verbose: diagnostics on stderr.
func flagVerbose(cmd *cobra.Command, p *bool, help string) {
	cmd.Flags().BoolVarP(p, "verbose", "v", false, help)
}

// --json: JSON on stdout. fs is the command's Flags, or its
// PersistentFlags when every subcommand takes it.
func flagJSON(fs *pflag.FlagSet, p *bool, help string) { fs.BoolVar(p, "json", false, help) }

// --cwd: the directory an agent works in.
func flagCwd(cmd *cobra.Command, p *string, help string) {
	cmd.Flags().StringVar(p, "cwd", "", help)
	_ = cmd.RegisterFlagCompletionFunc("cwd", completeDirs)
}

// --project-root: the project a session or persona belongs to.
func flagProjectRoot(cmd *cobra.Command, p *string, def, help string) {
	cmd.Flags().StringVar(p, "project-root", def, help)
	_ = cmd.RegisterFlagCompletionFunc("project-root", completeDirs)
}

// --root: a directory project roots must lie in (repeatable).
func flagRoot(cmd *cobra.Command, p *stringList) {
	cmd.Flags().Var(p, "root", "directory project roots must lie in (repeatable; default: the current directory)")
	_ = cmd.RegisterFlagCompletionFunc("root", completeDirs)
}

// --session: a harness session to continue.
func flagSession(cmd *cobra.Command, p *string, help string) {
	cmd.Flags().StringVar(p, "session", "", help)
}

// --persona: the persona of a new session.
func flagPersona(cmd *cobra.Command, p *string, help string) {
	cmd.Flags().StringVar(p, "persona", "", help)
	_ = cmd.RegisterFlagCompletionFunc("persona", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		root := "."
		for _, name := range []string{"project-root", "cwd"} {
			if f := cmd.Flags().Lookup(name); f != nil && f.Value.String() != "" {
				root = f.Value.String()
			}
		}
		entries, _ := persona.List(root)
		var ids []string
		for _, e := range entries {
			ids = append(ids, e.ID)
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	})
}

// --mode: a session's mode.
func flagMode(cmd *cobra.Command, p *string, def, help string) {
	cmd.Flags().StringVar(p, "mode", def, help)
	_ = cmd.RegisterFlagCompletionFunc("mode", completeWords(string(persona.ModeWorkbench), string(persona.ModePipeline), string(persona.ModeDirect)))
}

// --model: the model a turn or session uses.
func flagModel(cmd *cobra.Command, p *string, help string) {
	cmd.Flags().StringVar(p, "model", "", help)
}

// --permission-mode: how tools are allowed.
func flagPermissionMode(cmd *cobra.Command, p *string, def, help string) {
	cmd.Flags().StringVar(p, "permission-mode", def, help)
	_ = cmd.RegisterFlagCompletionFunc("permission-mode", completeWords(engine.PermissionModes...))
}

// --max-turns: model calls per turn at most.
func flagMaxTurns(cmd *cobra.Command, p *int, help string) {
	cmd.Flags().IntVar(p, "max-turns", 0, help)
}

// --allowed-tools: tools to auto-approve (comma-separated, repeatable).
func flagAllowedTools(cmd *cobra.Command, p *stringList, help string) {
	cmd.Flags().Var(p, "allowed-tools", help)
}

// --approval-timeout: how long a tool waits for a person's answer.
func flagApprovalTimeout(cmd *cobra.Command, p *time.Duration, def time.Duration, help string) {
	cmd.Flags().DurationVar(p, "approval-timeout", def, help)
}

// --warm: agents started ahead for the next turns.
func flagWarm(cmd *cobra.Command, p *int, def int, help string) {
	cmd.Flags().IntVar(p, "warm", def, help)
}

// --no-checkpoints: no snapshot of the project's files before each turn
// (harness.Config.Checkpoints.Off; a rewind then cannot restore files).
func flagNoCheckpoints(cmd *cobra.Command, p *bool) {
	cmd.Flags().BoolVar(p, "no-checkpoints", false, "take no snapshot of the project's files before each turn (a rewind then cannot restore them)")
}

// --addr: where a server listens.
func flagAddr(cmd *cobra.Command, p *string, def string) {
	cmd.Flags().StringVar(p, "addr", def, "address to listen on (a non-loopback one needs --token)")
	_ = cmd.RegisterFlagCompletionFunc("addr", cobra.NoFileCompletions)
}

// --url: the server a client command talks to (nodes, tui).
func flagURL(fs *pflag.FlagSet, p *string, def, help string) { fs.StringVar(p, "url", def, help) }

// --token: the bearer token of a server.
func flagToken(cmd *cobra.Command, p *string, help string) {
	cmd.Flags().StringVar(p, "token", "", help+" (default: $HARNESS_TOKEN)")
	_ = cmd.RegisterFlagCompletionFunc("token", cobra.NoFileCompletions)
}

// --allow-host and --allow-origin: what a server's guard lets in
// besides loopback.
func flagAllowHostOrigin(cmd *cobra.Command, hosts, origins *stringList, originHelp string) {
	cmd.Flags().Var(hosts, "allow-host", "extra Host header value to accept (repeatable)")
	cmd.Flags().Var(origins, "allow-origin", originHelp)
}

// --config: the agents' configuration file.
func flagConfig(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "config", "agents.yaml", "the agents configuration")
	_ = cmd.RegisterFlagCompletionFunc("config", completeYAML)
}

// stringList is a repeatable or comma-separated flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Type() string { return "list" }

func (s *stringList) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*s = append(*s, part)
		}
	}
	return nil
}

// mcpConfigFlag is --mcp-config: MCP server files in Claude Code's
// .mcp.json form, read when the flag is parsed (a file that cannot be read
// or parsed is a usage error naming it: exit 2), later files replacing
// same-named servers of earlier ones. The result is harness.Config.MCP:
// the core merges it over each project's .mcp.json and under a persona's
// mcp_servers selection.
type mcpConfigFlag struct {
	files []string
	cfg   *mcpconfig.Config
}

func (f *mcpConfigFlag) String() string { return strings.Join(f.files, ",") }

func (f *mcpConfigFlag) Type() string { return "file" }

func (f *mcpConfigFlag) Set(path string) error {
	c, err := mcpconfig.Load(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	f.files, f.cfg = append(f.files, path), mcpconfig.Merge(f.cfg, c)
	return nil
}

// Config is the servers given (nil: no --mcp-config).
func (f *mcpConfigFlag) Config() *mcpconfig.Config { return f.cfg }

// --mcp-config: MCP servers every session's agent gets.
func flagMCPConfig(cmd *cobra.Command, p *mcpConfigFlag) {
	cmd.Flags().Var(p, "mcp-config", "MCP servers for every session's agent, in .mcp.json form ({\"mcpServers\": {NAME: {command, args, env} | {type: \"http\", url, headers}}}; repeatable, later files win); merged over each project's .mcp.json, under a persona's mcp_servers")
	_ = cmd.RegisterFlagCompletionFunc("mcp-config", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"json"}, cobra.ShellCompDirectiveFilterFileExt
	})
}

// --grace: how long running turns get to stop at the end.
func flagGrace(cmd *cobra.Command, p *time.Duration, def time.Duration) {
	cmd.Flags().DurationVar(p, "grace", def, "at the end of input or on SIGTERM/SIGINT: how long running turns get to stop before they are killed")
}

// --project-config: a person lets the agents read the project's own
// configuration (engines.Config.ProjectConfig). Off, Claude Code reads
// the user's settings only (no project .claude/settings*.json, hooks,
// CLAUDE.md or skills) and Codex treats the project as untrusted (no
// .codex/config.toml, no AGENTS.md of its own): files an agent can write
// would otherwise widen what it may do (issue 29).
func flagProjectConfig(cmd *cobra.Command, p *bool) {
	cmd.Flags().BoolVar(p, "project-config", false, "let Claude Code and Codex read the project's own configuration (.claude/settings.json, CLAUDE.md, skills, hooks; .codex/config.toml, AGENTS.md): only for a project whose files you trust, since an agent that can write them can widen what it may do")
}

// --state-dir: where the session index lives.
func flagStateDir(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "state-dir", "", "session index directory (default: $XDG_STATE_HOME/harness)")
}

// --isolation, --base, --branch (a new session in a git worktree of its
// own) and --sandbox: the doors that make one session (agent serve, tui).
func flagIsolation(cmd *cobra.Command, f *isolationFlags) {
	cmd.Flags().StringVar(&f.isolation, "isolation", "", `"worktree": the new session works in a git worktree of its own, on a new branch, outside the project's tree (the project must be in a git repository)`)
	cmd.Flags().StringVar(&f.base, "base", "", "with --isolation worktree: the commit-ish the branch starts at (default: the project's HEAD; a remote ref such as origin/main is fetched first)")
	cmd.Flags().StringVar(&f.branch, "branch", "", "with --isolation worktree: the new branch's name (default: harness/<first 8 of the session id>)")
	flagSandbox(cmd, &f.sandbox, "run the agent in the kernel sandbox (Landlock): it writes only its workdir minus the protected paths, its own state and a private TMPDIR; turns fail on a kernel without Landlock")
	flagSandboxOpenNetwork(cmd, &f.openNetwork)
}

// --sandbox: the agents run in the kernel sandbox (harness.Config.Sandbox).
func flagSandbox(cmd *cobra.Command, p *bool, help string) {
	cmd.Flags().BoolVar(p, "sandbox", false, help)
}

// --sandbox-open-network: the engines whose sandboxed agents keep an open
// network (harness.Config.SandboxOpenNetwork).
func flagSandboxOpenNetwork(cmd *cobra.Command, p *[]string) {
	cmd.Flags().StringSliceVar(p, "sandbox-open-network", nil, "with --sandbox: engines whose agents keep an open network (comma-separated; * = all). The others connect over TCP only to their model API's port, their proxy's and their HTTP MCP servers', and listen on none but their own loopback port (opencode's) (Landlock's network rules, Linux 6.7+; by port, not by host; UDP and Unix sockets are not limited)")
}
