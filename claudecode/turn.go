package claudecode

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/internal/child"
	"github.com/chirality/harness/internal/procgroup"
	"github.com/chirality/harness/internal/rundir"
	"github.com/chirality/harness/internal/secrets"
	"github.com/chirality/harness/logging"
	"github.com/chirality/harness/mcpconfig"
	"github.com/chirality/harness/sandbox"
	"github.com/rs/zerolog"
)

// Turn is one running CLI child and its event stream:
//
//	t, err := m.StartTurn(ctx, "session-1", "hello", claudecode.TurnOpts{})
//	if err != nil { … }
//	defer t.Close()
//	for t.Next() {
//		ev := t.Event()
//		…
//	}
//	if err := t.Err(); err != nil { … } // how a turn that did not complete ended
//
// The last event is always exactly one process:exit. Next, Event and Err
// are for one consumer goroutine; Interrupt, Kill and Close may be called
// from any goroutine, more than once. Every goroutine a Turn starts has
// ended by the time Next returns false.
type Turn struct {
	m    *Manager
	log  zerolog.Logger
	key  string
	bin  string
	opts TurnOpts
	args []string

	proc    *child.Process
	pid     int
	stdin   *stdinWriter
	decoder *Decoder
	started time.Time

	s     *engine.Stream // ended by run, with how the turn ended
	scrub secrets.Events // what run emits goes through it
	out   []event.Event  // scrub's output, reused

	exited    chan struct{} // the child was reaped and its group killed
	gotResult chan struct{} // the turn's result frame arrived
	readDone  chan struct{} // stdout reached its end
	done      chan struct{} // the stream was read to its end
	exitCode  int
	exitSig   string
	secrets   []string // scrubbed from the child's stderr
	mcpFile   string   // the private --mcp-config file, removed when the child has exited

	approvals       context.Context // asked approvals wait on it; cancelled when stdout ends
	approvalsCancel context.CancelFunc
	late            sync.WaitGroup // the message's writer and askApproval goroutines, joined when the stream ends
	approver        atomic.Pointer[engine.Approver]

	sent chan struct{} // the first message was written (or could not be)
	// Steering (Steer): each steered message makes the CLI end the cycle
	// it is in with a result of its own and run the message in a new one
	// (new system/init, new result). owed counts the steers whose cycle
	// has not begun; a result while one is owed is not the turn's end:
	// its terminal event and the next cycle's session:init are dropped.
	steerMu    sync.Mutex
	owed       int
	ended      bool         // the turn's last result arrived: no more steers
	asking     atomic.Int32 // approval questions open (askApproval)
	dropEnd    int          // terminal events to drop (run's goroutine only)
	dropInit   int          // session:init events to drop (run's goroutine only)
	resultOnce sync.Once
	stopMu     sync.Mutex
	stopLevel  int         // 0 none, 1 interrupt, 2 kill
	running    atomic.Bool // set once the child started
	closeOnce  sync.Once
	wg         sync.WaitGroup
}

const (
	stopInterrupt = 1
	stopKill      = 2
)

// streamBuffer is how many events a turn queues between its reader of
// the child and its consumer: enough for the consumer to flush once per
// burst; an item is an event.Event (≈220 bytes), and 256 of them were
// 57 KB allocated at each turn's start.
const streamBuffer = 64

func newTurn(m *Manager, key, bin string, opts TurnOpts) *Turn {
	log := m.log
	if opts.Logger != nil {
		log = *opts.Logger
	}
	// What the turn adds to the child's environment (a demo's or a
	// fake API's key) is scrubbed as the Manager's own environment is.
	added := secrets.WithheldEnvValues(opts.Env)
	secrets.Register(added...)
	actx, acancel := context.WithCancel(context.Background())
	t := &Turn{
		m: m, log: log, key: key, bin: bin, opts: opts, args: m.projectArgs(opts),
		approvals: actx, approvalsCancel: acancel,
		s:         engine.NewStream(streamBuffer),
		exited:    make(chan struct{}),
		gotResult: make(chan struct{}),
		readDone:  make(chan struct{}),
		done:      make(chan struct{}),
		secrets:   slices.Concat(m.withheld, added),
		sent:      make(chan struct{}),
	}
	if opts.Approver != nil {
		t.approver.Store(&opts.Approver)
	}
	return t
}

// SessionKey is the key the turn was started for.
func (t *Turn) SessionKey() string { return t.key }

// Pid is the child's process id (and its process group id).
func (t *Turn) Pid() int { return t.pid }

// Command is the child's argv, program first, with withheld values
// scrubbed: safe to log or print.
func (t *Turn) Command() []string {
	out := make([]string, 0, len(t.args)+1)
	out = append(out, t.bin)
	for _, a := range t.args {
		out = append(out, secrets.Scrub(a))
	}
	return out
}

// Done is closed when the stream has ended (after process:exit was read).
func (t *Turn) Done() <-chan struct{} { return t.done }

// Exited is closed once the child and its process group are gone.
func (t *Turn) Exited() <-chan struct{} { return t.exited }

// start spawns the child and the goroutines that serve it, and writes
// message to it.
func (t *Turn) start(message string) error {
	if err := t.spawn(); err != nil {
		return err
	}
	t.send(message)
	return nil
}

// send writes the user's message to the child on a goroutine (a child
// that does not read must not block the caller), joined with the others
// started after spawn.
func (t *Turn) send(message string) {
	t.running.Store(true)
	t.late.Add(1)
	go func() {
		defer t.late.Done()
		defer close(t.sent)
		if err := t.stdin.sendUser(message); err != nil {
			t.log.Warn().Str("session", t.key).Err(err).Msg("could not write the prompt to the CLI")
		}
	}()
}

// spawn starts the child and the goroutines that serve it; the child
// then waits for its message on stdin.
func (t *Turn) spawn() error {
	if t.opts.MCP != nil {
		path, err := writeMCPFile(t.opts.MCPDir, t.opts.MCP)
		if err != nil {
			return err
		}
		t.mcpFile = path
		t.args = append(slices.Clip(t.args), "--mcp-config="+path)
	}
	cfg := child.Config{Path: t.bin, Args: t.args, Dir: t.opts.Cwd,
		Env:     append(secrets.FilterEnv(t.m.cfg.Env, t.m.cfg.AllowEnv), t.opts.Env...),
		Secrets: t.secrets, Log: t.log.With().Str("session", t.key).Logger(), StderrSource: "claude stderr",
		StderrLevel: zerolog.WarnLevel, // the CLI writes to stderr only when something is wrong
		OnExit:      t.removeMCPFile, DrainGrace: t.m.cfg.KillGrace}
	if t.opts.Sandbox {
		cfg.Sandbox = t.sandboxSpec(cfg.Env)
	}
	t.started = time.Now()
	p, err := child.Start(cfg)
	if err != nil {
		t.removeMCPFile()
		if se := (*child.StartError)(nil); errors.As(err, &se) {
			return t.m.errorf("claudecode: start %s: %v", t.bin, se.Err)
		}
		return fmt.Errorf("claudecode: %w", err)
	}
	t.proc, t.pid = p, p.Pid()
	t.stdin = &stdinWriter{f: p.Stdin(), pending: map[string]chan controlReply{}}
	t.log.Info().Str("sessionId", t.key).Strs("command", t.Command()).Int("pid", t.pid).Msg(logging.EventProcessSpawn)

	t.decoder = NewDecoder(flushingReader{p.Stdout(), t.s}, DecoderOptions{
		SessionID:    t.key,
		MaxLineBytes: t.m.cfg.MaxLineBytes,
		OnFrame:      t.onFrame,
		OnLineError: func(e *LineError) {
			t.log.Warn().Str("sessionId", t.key).Str("line", secrets.Scrub(e.Prefix)).Int("lineNumber", e.Line).
				Bool("oversize", e.Oversize).AnErr("error", e.Err).Msg(logging.EventParseError) // the line (first 500 bytes) is skipped
		},
	})

	t.wg.Add(1)
	go t.wait()
	go t.run()
	return nil
}

// run reads stdout to its end, then ends the stream. Every event goes
// through the turn's secrets.Events on its way (emit), so none carries a
// secret the process knows of, or a credential in a known format.
func (t *Turn) run() {
	for t.decoder.Next() {
		ev := t.decoder.Event()
		switch {
		case t.dropEnd > 0 && (ev.Type == event.TypeSessionComplete || ev.Type == event.TypeSessionError):
			t.dropEnd--
			continue
		case t.dropInit > 0 && ev.Type == event.TypeSessionInit:
			t.dropInit--
			continue
		}
		t.emit(ev)
	}
	if err := t.decoder.Err(); err != nil && !errors.Is(err, os.ErrClosed) {
		t.log.Warn().Str("session", t.key).Err(err).Msg("reading the CLI's stdout failed")
	}
	close(t.readDone)
	t.approvalsCancel() // a question still open has no one left to answer it
	// stdout is closed: the child is exiting or gone. Make sure it goes.
	select {
	case <-t.exited:
	case <-time.After(t.m.cfg.KillGrace):
		t.stop(stopKill)
		<-t.exited
	}
	t.stdin.close()
	t.wg.Wait()
	t.proc.Wait() // the end of stderr (bounded), every pipe closed
	// The first turn started the Manager's version check; it is joined
	// here so that no goroutine outlives the turn that started it.
	<-t.m.versionDone

	// the result frame carried session:complete or session:error
	end := engine.TurnEnd{Code: t.exitCode, Signal: t.exitSig, Release: func() { t.m.release(t.key, t) }}
	result, gotResult := t.decoder.Result()
	if gotResult {
		if result.Subtype != "success" || result.IsError {
			se := t.decoder.m.classify(result)
			end.Err = &TurnError{Kind: se.Kind, Message: secrets.Scrub(se.Error), Subtype: result.Subtype, ExitCode: t.exitCode, Signal: t.exitSig}
		}
	} else {
		te := t.noResultError()
		code := t.exitCode
		end.Err = te
		end.Error = &event.SessionError{Error: te.Message, Kind: te.Kind, ExitCode: &code, StderrTail: te.StderrTail}
	}
	level := t.stopLevelNow()
	exit := t.log.Info().Str("sessionId", t.key).Int("exitCode", t.exitCode)
	if t.exitSig == "" {
		exit = exit.Interface("signal", nil)
	} else {
		exit = exit.Str("signal", t.exitSig)
	}
	exit.Int64("durationMs", time.Since(t.started).Milliseconds()).Int("pid", t.pid).Bool("result", gotResult).
		Int("stopRequested", level).Msg(logging.EventProcessExit)
	t.s.End(end.Report(func(ev event.Event) {
		ev.SessionID = t.key
		t.emit(ev)
	}))
}

// EventsScrubbed reports that every event Next returns went through the
// process's scrubber (emit): engine.ScrubbedTurn.
func (t *Turn) EventsScrubbed() bool { return true }

// emit scrubs ev and puts what it becomes on the stream (a delta may be
// held back for the next one; see secrets.Events). Only run calls it.
// The events are queued without waking the consumer: the reader flushes
// them before it reads the pipe again (flushingReader) or does anything
// else that may wait (onFrame), so the consumer is woken once per read
// of the pipe, not once per line, and never kept waiting while the
// reader waits.
func (t *Turn) emit(ev event.Event) {
	t.out = t.scrub.Add(t.out[:0], ev)
	for i := range t.out {
		t.s.Queue(t.out[i])
	}
}

// flushingReader is the child's stdout as the decoder reads it: before
// each read of the pipe, which may wait for the child, what run queued
// is flushed to the consumer.
type flushingReader struct {
	r io.Reader
	s *engine.Stream
}

func (f flushingReader) Read(p []byte) (int, error) {
	f.s.Flush()
	return f.r.Read(p)
}

func (t *Turn) noResultError() *TurnError {
	te := &TurnError{ExitCode: t.exitCode, Signal: t.exitSig, StderrTail: secrets.Scrub(t.proc.StderrTail())}
	how := fmt.Sprintf("exit status %d", t.exitCode)
	if t.exitSig != "" {
		how = "signal " + t.exitSig
	}
	switch t.stopLevelNow() {
	case stopKill:
		te.Kind, te.Message = event.ErrorKilled, "turn killed ("+how+")"
	case stopInterrupt:
		te.Kind, te.Message = event.ErrorInterrupted, "interrupted ("+how+")"
	default:
		te.Kind = event.ErrorProcess
		te.Message = "claude exited without a result (" + how + ")"
		if last := lastLine(te.StderrTail); last != "" {
			te.Message += ": " + last
		}
		if strings.Contains(te.StderrTail, "No conversation found") {
			te.Kind = event.ErrorResumeNotFound
		}
	}
	return te
}

// wait waits for the runner to reap the child (its MCP file removed,
// whatever is left of its process group killed: tools that outlived it),
// then bounds how long stdout may stay open.
func (t *Turn) wait() {
	defer t.wg.Done()
	t.exitCode, t.exitSig = t.proc.ExitStatus()
	close(t.exited)
	// A process that left the group (setsid) may still hold stdout open;
	// do not let it hold the turn.
	timer := time.NewTimer(t.m.cfg.KillGrace)
	defer timer.Stop()
	select {
	case <-timer.C:
		_ = t.proc.Stdout().Close()
	case <-t.readDone:
	}
}

// onFrame routes control traffic and watches for the result, on the
// reader goroutine, then hands the frame to the caller's hook.
func (t *Turn) onFrame(f Frame) {
	if f.Type != "stream_event" || t.opts.OnFrame != nil {
		// What follows may write to the child's stdin, which waits
		// while its pipe is full, or call the caller's hook (on every
		// frame, a stream_event's too), which may block: nothing queued
		// waits for it (emit).
		t.s.Flush()
	}
	switch f.Type {
	case "result":
		if f.ParentToolUseID == "" && t.steered() {
			// The end of a cycle a steer cut: the turn goes on with
			// the steered message.
			t.dropEnd++
			t.dropInit++
		} else if f.ParentToolUseID == "" {
			t.resultOnce.Do(func() {
				close(t.gotResult)
				// The turn is over: closing stdin lets the CLI exit.
				t.stdin.close()
				t.wg.Add(1)
				go t.exitAfterResult()
			})
		}
	case "control_response":
		t.stdin.deliver(f.Raw)
	case "control_request":
		if t.approver.Load() != nil && isCanUseTool(f.Raw) {
			// Asked once the consumer has taken every event before it
			// (the stream's Defer): the question never overtakes the
			// tool:start it is about.
			raw := append([]byte(nil), f.Raw...)
			t.s.Defer(func() {
				t.late.Add(1)
				go t.askApproval(raw)
			})
		} else {
			t.stdin.refuse(f.Raw)
		}
	}
	if t.opts.OnFrame != nil {
		t.opts.OnFrame(f)
	}
}

// exitAfterResult kills a CLI that lingers after its result.
func (t *Turn) exitAfterResult() {
	defer t.wg.Done()
	timer := time.NewTimer(t.m.cfg.KillGrace)
	defer timer.Stop()
	select {
	case <-t.exited:
	case <-timer.C:
		t.log.Warn().Str("session", t.key).Msg("claude did not exit after its result; stopping it")
		t.escalate(stopKill)
	}
}

// Steer writes message to the running CLI as a user message of its
// streamed input (engine.Steerer): the CLI takes it into the running
// turn, so the model's next request carries it. It fails with
// engine.ErrNotRunning once the turn's result has arrived (its stdin is
// then closed) or before the child runs.
func (t *Turn) Steer(ctx context.Context, message string) error {
	if !t.running.Load() {
		return engine.ErrNotRunning
	}
	select { // after the turn's own message, never before it
	case <-t.sent:
	case <-ctx.Done():
		return ctx.Err()
	}
	t.steerMu.Lock()
	switch {
	case t.ended:
		t.steerMu.Unlock()
		return engine.ErrNotRunning
	case t.owed > 0:
		// Two messages in one cut could start one cycle, and the turn
		// would wait for a result that never comes.
		t.steerMu.Unlock()
		return fmt.Errorf("%w: the previous steered message has not reached the agent yet; try again", engine.ErrBusy)
	}
	t.owed++
	t.steerMu.Unlock()
	done := make(chan error, 1)
	go func() {
		// With a question open, "now" would cut the cycle under it: the
		// message waits for the answer ("later"), as claude-agent-acp's
		// steering does.
		priority := "now"
		if t.asking.Load() > 0 {
			priority = "later"
		}
		err := t.stdin.sendSteer(message, priority)
		if err != nil { // never written: no cycle is owed for it
			t.steerMu.Lock()
			t.owed--
			t.steerMu.Unlock()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if errors.Is(err, os.ErrClosed) {
			return engine.ErrNotRunning
		}
		return err
	case <-ctx.Done():
		// The write goes on (a child that reads nothing keeps it): it
		// ends when stdin is closed with the turn.
		return ctx.Err()
	}
}

// steered is called at a top-level result: it reports whether a steer is
// owed (the result ends the cycle the steer cut, not the turn), and
// otherwise marks the turn ended, so no steer is written after its end.
func (t *Turn) steered() bool {
	t.steerMu.Lock()
	defer t.steerMu.Unlock()
	if t.owed > 0 && !t.ended {
		t.owed--
		return true
	}
	t.ended = true
	return false
}

// Next advances to the next event, blocking until there is one. It returns
// false after process:exit.
func (t *Turn) Next() bool {
	if t.s.Next() {
		return true
	}
	t.late.Wait() // stdout ended, so their context is cancelled
	t.closeOnce.Do(func() { close(t.done) })
	return false
}

// Event returns the event Next advanced to.
func (t *Turn) Event() event.Event { return t.s.Event() }

// Err returns, once Next has returned false, nil when the turn completed
// and a *TurnError saying how it ended otherwise.
func (t *Turn) Err() error {
	select {
	case <-t.done:
		return t.s.Err()
	default:
		return nil
	}
}

// Interrupt asks the CLI to stop the turn: an interrupt control request
// first (the CLI then ends the turn with a result), SIGINT to the process
// group if no result comes within InterruptGrace, then SIGTERM, then
// SIGKILL after KillGrace. It returns at once; the stream reports the
// ending (session:error of kind interrupted). Safe to call more than once
// and after the turn ended.
func (t *Turn) Interrupt() error {
	t.stop(stopInterrupt)
	return nil
}

// Kill stops the turn now: SIGTERM to the process group, SIGKILL after
// KillGrace. It returns at once. Safe to call more than once.
func (t *Turn) Kill() error {
	t.stop(stopKill)
	return nil
}

// killNow sends SIGKILL to the group at once (Manager.Shutdown's last step).
func (t *Turn) killNow() {
	t.raise(stopKill)
	if t.proc != nil { // (a turn is registered before its child starts)
		_ = t.proc.Kill()
	}
}

// Close kills the turn if it is still running and discards the events
// that are left, returning once every goroutine of the turn has ended.
// Safe to call more than once, and after the stream was read to its end.
func (t *Turn) Close() error {
	select {
	case <-t.done:
		return nil
	default:
	}
	t.stop(stopKill)
	for t.Next() {
	}
	return nil
}

func (t *Turn) stopLevelNow() int {
	t.stopMu.Lock()
	defer t.stopMu.Unlock()
	return t.stopLevel
}

// raise records a stop request; it reports whether this is a new, harsher
// one.
func (t *Turn) raise(level int) bool {
	t.stopMu.Lock()
	defer t.stopMu.Unlock()
	if level <= t.stopLevel {
		return false
	}
	t.stopLevel = level
	if level == stopInterrupt {
		t.decoder.m.interruptRequested.Store(true)
	}
	return true
}

func (t *Turn) stop(level int) {
	select {
	case <-t.exited:
		return
	default:
	}
	if !t.raise(level) {
		return
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		t.escalate(level)
	}()
}

// escalate runs the stop sequence for a level on the runner's ladder:
// for an interrupt, the control request, then SIGINT, each given
// InterruptGrace to bring the result; then SIGTERM, and SIGKILL after
// KillGrace. The sequence ends as soon as the child is gone.
func (t *Turn) escalate(level int) {
	l := child.Ladder{InterruptGrace: -1, TerminateGrace: t.m.cfg.KillGrace, Until: t.gotResult,
		OnSignal: func(sig os.Signal) {
			switch sig {
			case procgroup.Interrupt:
				t.log.Info().Str("session", t.key).Msg("no result after interrupt request; sending SIGINT")
			case procgroup.Kill:
				t.log.Warn().Str("session", t.key).Int("pid", t.pid).Msg("claude ignored SIGTERM; sending SIGKILL")
			}
		}}
	if level == stopInterrupt {
		l.Ask = func() {
			t.wg.Add(1)
			go func() {
				defer t.wg.Done()
				// The write may block on a full pipe; it must not hold up
				// the signals, so it runs on its own.
				if err := t.stdin.sendInterrupt(); err != nil {
					t.log.Debug().Str("session", t.key).Err(err).Msg("interrupt control request not sent")
				}
			}()
		}
		l.AskGrace, l.InterruptGrace = t.m.cfg.InterruptGrace, t.m.cfg.InterruptGrace
	}
	_ = t.proc.Stop(l)
}

// stdinWriter owns the child's stdin: the prompt, control requests, and
// replies to the CLI's own requests. Writes are serialised.
type stdinWriter struct {
	mu      sync.Mutex
	f       *os.File
	closed  bool
	seq     int
	pmu     sync.Mutex
	pending map[string]chan controlReply
}

type controlReply struct {
	Subtype string          `json:"subtype"`
	ID      string          `json:"request_id"`
	Body    json.RawMessage `json:"response"`
	Error   string          `json:"error"`
}

func (w *stdinWriter) writeLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return os.ErrClosed
	}
	_, err = w.f.Write(append(b, '\n'))
	return err
}

func (w *stdinWriter) sendUser(message string) error {
	return w.writeLine(map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": message},
		"parent_tool_use_id": nil,
		"session_id":         "",
	})
}

// sendSteer writes a user message for the running turn with a priority
// (the Agent SDK's steering, as claude-agent-acp uses it): with "now" the
// CLI cuts the cycle it is in (a running tool is aborted, the model's
// answer so far kept), ends it with a result, and runs the message in a
// new cycle of the same conversation; with "later" the message waits for
// the cycle's end, then runs the same way (verified on the pinned CLI
// against the fake API). Either way one more result comes (Turn.owed).
func (w *stdinWriter) sendSteer(message, priority string) error {
	return w.writeLine(map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": message},
		"parent_tool_use_id": nil,
		"session_id":         "",
		"priority":           priority,
	})
}

// sendInterrupt sends the interrupt control request. It does not wait for
// the acknowledgement: the result frame is what ends the turn.
func (w *stdinWriter) sendInterrupt() error {
	w.mu.Lock()
	w.seq++
	id := fmt.Sprintf("harness_%d", w.seq)
	w.mu.Unlock()
	return w.writeLine(map[string]any{"type": "control_request", "request_id": id,
		"request": map[string]any{"subtype": "interrupt"}})
}

// deliver hands a control_response to whoever waits for it.
func (w *stdinWriter) deliver(raw []byte) {
	var f struct {
		Response controlReply `json:"response"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return
	}
	w.pmu.Lock()
	ch := w.pending[f.Response.ID]
	delete(w.pending, f.Response.ID)
	w.pmu.Unlock()
	if ch != nil {
		ch <- f.Response
	}
}

// refuse answers a request from the CLI this host does not handle, so
// the CLI never waits on us. (Tool approvals will be answered here.)
func (w *stdinWriter) refuse(raw []byte) {
	var f struct {
		ID      string `json:"request_id"`
		Request struct {
			Subtype string `json:"subtype"`
		} `json:"request"`
	}
	if json.Unmarshal(raw, &f) != nil || f.ID == "" {
		return
	}
	_ = w.writeLine(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "error", "request_id": f.ID, "error": "harness does not handle " + f.Request.Subtype + " requests",
	}})
}

func (w *stdinWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		_ = w.f.Close()
	}
}

// Buffered reports how many events are ready to be read without waiting:
// a consumer can flush its output when it reaches 0.
func (t *Turn) Buffered() int { return t.s.Buffered() }

// writeMCPFile writes cfg in .mcp.json form to a new file in dir (""
// = the private runtime directory, package internal/rundir) that only
// this user can read (it holds the servers' env and header values).
func writeMCPFile(dir string, cfg *mcpconfig.Config) (string, error) {
	b, err := cfg.JSON()
	if err != nil {
		return "", fmt.Errorf("claudecode: MCP config: %w", err)
	}
	if dir == "" {
		// outside every project, this user's only (the file holds the
		// servers' secrets while a warm CLI waits)
		if dir, err = rundir.Dir(); err != nil {
			return "", fmt.Errorf("claudecode: MCP config file: %w", err)
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("claudecode: MCP config file: %w", err)
	}
	f, err := os.CreateTemp(dir, "mcp-*.json") // mode 0600
	if err != nil {
		return "", fmt.Errorf("claudecode: MCP config file: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("claudecode: MCP config file: %w", err)
	}
	return f.Name(), nil
}

// sandboxSpec is the kernel sandbox of the child with environment env:
// the CLI may write its state under HOME (~/.claude/, ~/.claude.json,
// ~/.cache/, ~/.local/state/, ~/.local/share/claude/, or
// CLAUDE_CONFIG_DIR) besides the workdir and its private TMPDIR; unless
// OpenNetwork, it may connect only to its API's port (ANTHROPIC_BASE_URL
// in its env, else in its settings.json, else https's 443), its proxy's
// and its HTTP MCP servers', and bind
// none (the CLI listens on nothing: it talks to the harness on stdio).
func (t *Turn) sandboxSpec(env []string) *sandbox.Spec {
	home := sandbox.Home(env)
	writable := sandbox.InHome(home, ".claude/", ".claude.json", ".cache/", ".local/state/", ".local/share/claude/")
	if d := sandbox.Getenv(env, "CLAUDE_CONFIG_DIR"); d != "" {
		writable = append(writable, d+string(filepath.Separator))
	}
	req := engine.Request{OpenNetwork: t.opts.OpenNetwork, MCP: t.opts.MCP}
	// the API's URL: the env's, else what the user's settings set
	api := []string{sandbox.Getenv(env, "ANTHROPIC_BASE_URL")}
	if api[0] == "" {
		if in := sandbox.URLsInFiles("ANTHROPIC_BASE_URL", filepath.Join(cmp.Or(sandbox.Getenv(env, "CLAUDE_CONFIG_DIR"), filepath.Join(home, ".claude")), "settings.json")); len(in) > 0 {
			api = in
		}
	}
	return &sandbox.Spec{Protected: t.opts.Protected, Writable: append(writable, t.opts.SandboxWritable...),
		Net: sandbox.NetOf(req, env, nil, api...)}
}

func (t *Turn) removeMCPFile() {
	if t.mcpFile != "" {
		if err := os.Remove(t.mcpFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.log.Warn().Str("session", t.key).Err(err).Msg("removing the MCP config file failed")
		}
	}
}
