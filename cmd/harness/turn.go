package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/chirality/harness"
	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/engines"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/event/fold"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/mcpconfig"
)

// turnFlags are the driver-level flags of `harness turn`.
type turnFlags struct {
	claudeBin, cwd, resume, permissionMode, model, promptFile string
	projectConfig                                             bool
	maxTurns                                                  int
	tools, allowedTools, disallowedTools                      stringList
	toolsSet                                                  bool
	json, verbose                                             bool
	// engine runs the turn (claude-code or anthropic); demo answers with
	// the embedded demo model.
	engine string
	demo   bool
	// The orchestrated path (orchestrate.go): a harness session.
	session, persona, mode, projectRoot string
	// mcp is --mcp-config.
	mcp mcpConfigFlag
}

func (c *cli) turnCmd() *cobra.Command {
	var f turnFlags
	cmd := &cobra.Command{
		Use:   "turn [flags] MESSAGE",
		Short: "run one agent turn and stream its events",
		Long: `usage: harness turn [flags] MESSAGE
       harness turn --session ID | --persona ID [--mode M] [--project-root DIR] MESSAGE

Runs one turn in the current directory (--cwd) and streams it: the answer
on stdout, tools, cost and errors on stderr (--json: every event as one
JSON line on stdout). Without --session or --persona the turn runs on the
engine with the flags as given, in an ephemeral session that leaves nothing
in the project; with them it runs in a harness session, as the gateway
does. Either way its events are scrubbed of secrets. SIGINT or SIGTERM
interrupts the turn (a second one kills it); an interrupted turn exits 130.
`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 || strings.TrimSpace(args[0]) == "" {
				return usageErrorf("give exactly one non-empty MESSAGE (quote it)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f.toolsSet = cmd.Flags().Changed("tools")
			return exitWith(c.turn(&f, args[0]))
		},
	}
	fs := cmd.Flags()
	flagClaudeBin(cmd, &f.claudeBin, "")
	flagProjectConfig(cmd, &f.projectConfig)
	flagCwd(cmd, &f.cwd, "directory to run in (default: the current one)")
	fs.StringVar(&f.resume, "resume", "", "Claude session id to continue")
	flagMaxTurns(cmd, &f.maxTurns, fmt.Sprintf("agentic turns at most (default %d)", claudecode.DefaultMaxTurns))
	fs.Var(&f.tools, "tools", `tools that exist for the model, comma-separated ("" none, "default" all)`)
	flagAllowedTools(cmd, &f.allowedTools, "tools to auto-approve (comma-separated, repeatable)")
	fs.Var(&f.disallowedTools, "disallowed-tools", "tools to remove (comma-separated, repeatable)")
	flagPermissionMode(cmd, &f.permissionMode, "", "one of "+strings.Join(engine.PermissionModes, ", "))
	flagModel(cmd, &f.model, "model name")
	fs.StringVar(&f.promptFile, "append-system-prompt-file", "", "file appended to the system prompt")
	flagJSON(cmd.Flags(), &f.json, "print each event as one JSON line on stdout")
	flagVerbose(cmd, &f.verbose, "log the driver's diagnostics to stderr")
	flagSession(cmd, &f.session, "run the turn in this harness session (persona, prompt and resume as the gateway does)")
	flagPersona(cmd, &f.persona, "create a harness session with this persona and run the turn in it")
	flagMode(cmd, &f.mode, "", "mode of the session --persona creates: workbench (default), pipeline or direct")
	flagProjectRoot(cmd, &f.projectRoot, "", "project of the session (default: the current directory)")
	flagEngine(cmd, &f.engine, "", "engine: claude-code (the Claude Code CLI; default), anthropic (the native loop on the Messages API), codex or an ACP agent")
	flagDemo(cmd, &f.demo)
	flagMCPConfig(cmd, &f.mcp)
	return cmd
}

func (f *turnFlags) opts() claudecode.TurnOpts {
	o := claudecode.TurnOpts{
		Cwd: f.cwd, Resume: f.resume, MaxTurns: f.maxTurns, PermissionMode: f.permissionMode,
		Model: f.model, AppendSystemPromptFile: f.promptFile,
		AllowedTools: f.allowedTools, DisallowedTools: f.disallowedTools,
	}
	if f.toolsSet {
		o.Tools = append([]string{}, f.tools...)
	}
	return o
}

// runTurn is `harness turn ARGS…`.
func runTurn(args []string, stdout, stderr io.Writer) int {
	return run(append([]string{"turn"}, args...), stdout, stderr)
}

// turn runs `harness turn` with its flags parsed.
func (c *cli) turn(f *turnFlags, message string) int {
	stdout, stderr := c.stdout, c.stderr
	pos := []string{message}
	if msg := checkDir("--cwd", f.cwd); msg != "" {
		fmt.Fprintln(stderr, "harness turn:", msg)
		return 2
	}
	if msg := checkDir("--project-root", f.projectRoot); msg != "" {
		fmt.Fprintln(stderr, "harness turn:", msg)
		return 2
	}
	if f.engine != "" {
		if f.engine = engines.Canonical(f.engine); !slices.Contains(engines.Names, f.engine) {
			fmt.Fprintf(stderr, "harness turn: --engine %q: want one of %s\n", f.engine, strings.Join(engines.Names, ", "))
			return 2
		}
	}
	if f.permissionMode != "" && !slices.Contains(engine.PermissionModes, f.permissionMode) {
		fmt.Fprintf(stderr, "harness turn: --permission-mode %q is not one of %s\n", f.permissionMode, strings.Join(engine.PermissionModes, ", "))
		return 2
	}
	var env, allowed []string
	if f.demo {
		d, err := engines.StartDemo(engines.DemoOptions{})
		if err != nil {
			fmt.Fprintln(stderr, "harness turn --demo:", userError(err))
			return 1
		}
		defer d.Close()
		env, allowed = d.Env, d.AllowedTools
	}
	if f.session != "" || f.persona != "" {
		return runOrchestrated(f, pos[0], env, allowed, stdout, stderr)
	}
	return runEphemeral(f, pos[0], env, allowed, stdout, stderr)
}

// runEphemeral is `harness turn` without --session or --persona: one turn
// through the core in an ephemeral session (Harness.StartTurn without a
// session), so
// its events are scrubbed as every session's are, and nothing of it is
// kept in the project. The turn runs with the flags as given, no persona
// or mode added; engines other than Claude Code and the native loop get
// the core's default permission mode (dontAsk) when none is given, as
// their sessions do.
func runEphemeral(f *turnFlags, message string, childEnv, allowed []string, stdout, stderr io.Writer) int {
	logger := verboseLogger(f.verbose, stderr)
	// a malformed file is a usage error here; the core then picks the
	// servers, leaving out a project's that no person trusted
	if _, err := f.directMCP(); err != nil {
		fmt.Fprintln(stderr, "harness turn:", err)
		return 2
	}
	cwd := f.cwd
	if cwd == "" {
		cwd = "."
	}
	cwd, err := filepath.Abs(cwd)
	if err != nil {
		fmt.Fprintln(stderr, "harness turn:", userError(err))
		return 1
	}
	name := f.engine
	if name == "" {
		name = engine.ClaudeCode
	}
	o := f.opts()
	req := engine.Request{SessionKey: "cli", Message: message, Cwd: cwd, Resume: o.Resume, Model: f.model, MaxTurns: f.maxTurns,
		PermissionMode: f.permissionMode, Tools: o.Tools, AllowedTools: o.AllowedTools, DisallowedTools: o.DisallowedTools}
	if req.PermissionMode == "" && name != engine.ClaudeCode && name != engine.Anthropic {
		req.PermissionMode = harness.DefaultPermissionMode
	}
	if isTTY(os.Stdin) && req.PermissionMode != "dontAsk" && req.PermissionMode != "bypassPermissions" {
		req.Approver = newTermApprover(os.Stdin, stderr) // a person at the terminal is asked, as in a session
	}
	if f.promptFile != "" {
		b, err := os.ReadFile(f.promptFile)
		if err != nil {
			fmt.Fprintln(stderr, "harness turn:", userError(err))
			return 2
		}
		// The file for the CLI (--append-system-prompt-file), its text
		// for the engines that take the prompt itself.
		req.SystemPromptFile, req.SystemPrompt = f.promptFile, string(b)
	}
	h, err := harness.New(harness.Config{
		Roots: []string{cwd}, Logger: &logger, Aliases: engines.Aliases, NoProjectLogs: true,
		Engines:  engines.Builtin(engines.Config{ClaudeBinary: f.claudeBin, ProjectConfig: f.projectConfig, ChildEnv: childEnv, Logger: &logger}),
		ChildEnv: childEnv, AllowedTools: allowed, MCP: f.mcp.Config(),
	})
	if err != nil {
		fmt.Fprintln(stderr, "harness turn:", userError(err))
		return 1
	}
	defer shutdownTurns(h)
	return streamTurn("harness turn", func() (*harness.Turn, error) {
		return h.StartTurn(context.Background(), harness.TurnRequest{Engine: name, Message: message, Request: req})
	}, f.json, stdout, stderr)
}

// checkDir says what is wrong with a directory flag's value ("" = fine or
// unset), before any agent is started with it.
func checkDir(flag, dir string) string {
	if dir == "" {
		return ""
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Sprintf("%s %s: the directory does not exist", flag, dir)
	case err != nil:
		return fmt.Sprintf("%s %s: %v", flag, dir, err)
	case !fi.IsDir():
		return fmt.Sprintf("%s %s: not a directory", flag, dir)
	}
	return ""
}

// streamTurn runs one turn and prints it (errors prefixed by command). SIGINT or SIGTERM interrupts the
// turn (a second one kills it) and the remaining events are still printed.
// It returns 0 only when the turn completed (130 when interrupted).
func streamTurn(command string, start func() (*harness.Turn, error), asJSON bool, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	turn, err := start()
	if err != nil {
		fmt.Fprintln(stderr, command+":", userError(err))
		return failCode(err)
	}
	go func() {
		count := 0
		for {
			select {
			case <-sigs:
				count++
				if count == 1 {
					_ = turn.Interrupt()
				} else {
					_ = turn.Kill()
				}
			case <-turn.Done():
				return
			}
		}
	}()

	out := bufio.NewWriterSize(stdout, 64<<10)
	var p printer
	if asJSON {
		p = &jsonPrinter{w: out}
	} else {
		p = &textPrinter{out: out, errw: stderr}
	}
	for rec, err := range turn.Events(context.Background()) {
		if err != nil {
			break // the turn's error says how it ended
		}
		p.print(rec.Typed)
		// Flush when nothing else is waiting: batches under load, stays
		// interactive when tokens trickle in.
		if !rec.More {
			if err := out.Flush(); err != nil {
				_ = turn.Kill() // stdout is gone (a closed pipe): stop the agent too
			}
		}
	}
	_ = out.Flush()
	<-turn.Done()
	if err := turn.Err(); err != nil {
		if !asJSON {
			fmt.Fprintln(stderr, command+":", userError(err))
		}
		var te *engine.TurnError
		if errors.Is(err, claudecode.ErrInterrupted) || errors.As(err, &te) && te.Kind == event.ErrorInterrupted {
			return 130
		}
		return 1
	}
	return 0
}

type printer interface{ print(*event.Event) }

type jsonPrinter struct {
	w   *bufio.Writer
	buf []byte
}

func (p *jsonPrinter) print(e *event.Event) {
	p.buf = e.AppendJSON(p.buf[:0])
	p.buf = append(p.buf, '\n')
	_, _ = p.w.Write(p.buf)
}

// textPrinter streams the answer to stdout and everything about it (tools,
// cost, errors) to stderr, so `harness turn "…" > answer.md` keeps only the
// answer.
type textPrinter struct {
	out      *bufio.Writer
	errw     io.Writer
	midLine  bool
	thinking bool
	// wrote: answer text was printed; gap: a tool or thinking came since,
	// so the next text is a new block, set off by a blank line; newlines:
	// how many the printed answer ends with (up to 2).
	wrote, gap bool
	newlines   int
	fold       fold.Fold // the events as items
}

// side prints about the answer on stderr, first ending the answer's line
// on stdout, so both read well on one terminal and the answer file keeps
// whole lines.
func (p *textPrinter) side(format string, args ...any) {
	if p.midLine {
		p.writeAnswer("\n")
	}
	_ = p.out.Flush()
	fmt.Fprintf(p.errw, format, args...)
}

func (p *textPrinter) writeAnswer(s string) {
	if s == "" {
		return
	}
	_, _ = p.out.WriteString(s)
	trimmed := strings.TrimRight(s, "\n")
	if n := len(s) - len(trimmed); trimmed == "" {
		p.newlines = min(p.newlines+n, 2)
	} else {
		p.newlines = min(n, 2)
	}
	p.midLine = p.newlines == 0
}

func (p *textPrinter) print(e *event.Event) {
	u := p.fold.Add(e)
	for _, it := range u.Items() {
		p.item(&it)
	}
}

// item prints one update of an item of the fold: the answer's text as it
// streams (a subagent's is left out: its result arrives as a tool
// result), the rest on the side.
func (p *textPrinter) item(it *fold.Item) {
	if it.Event != nil && it.Event.Type == event.TypeChatComplete && p.midLine {
		p.writeAnswer("\n") // the answer's block ends
	}
	switch it.Kind {
	case fold.KindText:
		if it.Parent != "" || it.Done {
			return
		}
		if p.gap && p.wrote && it.Delta != "" {
			p.writeAnswer(strings.Repeat("\n", 2-p.newlines)) // two text blocks: a blank line between
		}
		if it.Delta != "" {
			p.gap = false
			p.wrote = true
		}
		p.writeAnswer(it.Delta)
	case fold.KindReasoning:
		if it.Done {
			return
		}
		p.gap = true
		if !p.thinking {
			p.side("· thinking…\n")
			p.thinking = true
		}
	case fold.KindTool:
		if t := it.Tool; it.New && t.Start != nil {
			p.thinking, p.gap = false, true
			p.side("⚙ %s %s\n", t.Name, oneLine(string(t.Input), 100))
		}
		if r := it.Tool.Result; it.Done {
			mark := "✓"
			if r.IsError {
				mark = "✗"
			}
			p.side("  %s %s\n", mark, oneLine(r.Content, 100))
		}
	case fold.KindApproval:
		if a := it.Approval.Request; it.New && a != nil {
			where := ""
			if a.Unsandboxed { // once allowed, it may run with no sandbox
				where = " (MAYBE OUTSIDE its sandbox)"
			}
			p.side("? %s wants to run%s %s\n", a.ToolName, where, oneLine(string(a.Input), 100))
		}
		if r := it.Approval.Resolved; it.Done {
			p.side("  %s (%s)\n", r.Decision, r.By)
		}
	case fold.KindPlan:
		if pr := it.Plan.Ready; it.New && pr != nil {
			p.side("? plan ready: %s\n", oneLine(pr.Plan, 100))
		}
		if r := it.Plan.Resolved; it.Done {
			p.side("  %s (%s)\n", r.Decision, r.By)
		}
	case fold.KindStatus, fold.KindEnd:
		p.status(it.Event)
	}
}

// status prints an event that shows a state: the session, a retry, what
// needs a person's trust, the turn's result or error.
func (p *textPrinter) status(e *event.Event) {
	switch e.Type {
	case event.TypeSessionInit:
		p.side("· session %s · %s\n", e.Init.ConversationID, e.Init.Model)
	case event.TypeSessionComplete:
		p.side("· done · $%.4f · %d turns · %d ms\n", e.Complete.CostUSD, e.Complete.NumTurns, e.Complete.DurationMS)
	case event.TypeSessionError:
		p.side("· %s: %s\n", e.Error.Kind, e.Error.Error)
		if e.Error.Kind == event.ErrorNotLoggedIn {
			p.side("  to log in: set ANTHROPIC_API_KEY, or run `claude /login` once; to try without an account: harness turn --demo \"…\"\n")
		}
	case event.TypeSessionRetry:
		p.side("· %s\n", e.Retry.Summary())
	case event.TypeTrustRequired:
		p.side("! %s\n", e.Trust.Message)
		if (e.Trust.Kind == "mcp" || e.Trust.Kind == "persona") && e.Trust.Name != "" {
			p.side("  trust it: harness trust accept %s %s --hash %s\n", e.Trust.Kind, e.Trust.Name, e.Trust.Hash)
		}
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) > n {
		return string([]rune(s)[:n]) + "…"
	}
	return s
}

// directMCP is the MCP servers of a turn run straight on an engine (no
// harness session): the project's .mcp.json, then --mcp-config, expanded
// as the core does, their env and header values registered with the
// scrubber. nil when there are none.
func (f *turnFlags) directMCP() (*mcpconfig.Config, error) {
	cwd := f.cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	project, err := mcpconfig.Project(cwd)
	if err != nil {
		return nil, err
	}
	cfg := mcpconfig.Merge(project, f.mcp.Config())
	if cfg.Len() == 0 {
		return nil, nil
	}
	if cfg, err = cfg.Expand(nil); err != nil {
		return nil, err
	}
	secrets.Register(cfg.Secrets()...)
	return cfg, nil
}
