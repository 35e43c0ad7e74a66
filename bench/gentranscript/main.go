// Command gentranscript writes a large, deterministic stream-json transcript
// shaped like what Claude Code CLI 2.1.329 prints with
//
//	claude -p --input-format stream-json --output-format stream-json \
//	       --verbose --include-partial-messages
//
// for a long agentic turn. It is the input of the harness-vs-TypeScript-SDK
// benchmark (see bench/README.md): claude-replay plays it to both consumers.
//
// Layout (defaults: -rounds 200 -deltas 1000, about 203k lines / 56 MB):
//
//	system/init                               (the real 2.1.329 init frame's shape, ~2.8 KB)
//	repeat -rounds times:
//	  system/status "requesting"
//	  stream_event message_start
//	  stream_event content_block_start        (text, index 0)
//	  stream_event content_block_delta × -deltas   (text_delta; words, markdown,
//	                                          code, escapes, non-ASCII, emoji)
//	  assistant                               (the text block, full round text)
//	  stream_event content_block_stop         (index 0)
//	  stream_event content_block_start        (tool_use, index 1, input {})
//	  stream_event content_block_delta × 4    (input_json_delta)
//	  assistant                               (the tool_use block, full input)
//	  stream_event content_block_stop         (index 1)
//	  stream_event message_delta              (stop_reason tool_use)
//	  stream_event message_stop
//	  user                                    (tool_result, tool_use_result, tool_result_meta)
//	system/status "requesting"
//	a short closing message (a few text deltas, stop_reason end_turn), as the
//	  CLI always makes one more request after a tool result
//	result                                    (success; result = the closing text)
//
// Strings are escaped the way JavaScript's JSON.stringify does (no \u003c
// style HTML escaping), as the CLI prints them. The same flags always give
// the same bytes.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

func main() {
	out := flag.String("out", "transcript.ndjson", "output path (- for stdout)")
	rounds := flag.Int("rounds", 200, "assistant rounds, each ending in a tool use")
	deltas := flag.Int("deltas", 1000, "text_delta events per round")
	piece := flag.Int("piece", 4, "average text_delta piece length in bytes (tunes the file size)")
	seed := flag.Uint64("seed", 1, "PRNG seed")
	flag.Parse()
	if *rounds < 1 || *deltas < 1 || *piece < 1 {
		fmt.Fprintln(os.Stderr, "gentranscript: -rounds, -deltas and -piece must be positive")
		os.Exit(2)
	}

	var f *os.File
	if *out == "-" {
		f = os.Stdout
	} else {
		var err error
		if f, err = os.Create(*out); err != nil {
			fmt.Fprintln(os.Stderr, "gentranscript:", err)
			os.Exit(1)
		}
	}
	g := newGen(f, *seed, *piece)
	g.transcript(*rounds, *deltas)
	if err := g.w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "gentranscript:", err)
		os.Exit(1)
	}
	if f != os.Stdout {
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "gentranscript:", err)
			os.Exit(1)
		}
	}
	fmt.Fprintf(os.Stderr, "gentranscript: wrote %s: %d bytes (%.1f MB), %d lines, %d rounds × %d deltas\n",
		*out, g.bytes, float64(g.bytes)/1e6, g.lines, *rounds, *deltas)
}

type gen struct {
	w         *bufio.Writer
	rng       *rand.Rand
	piece     int
	session   string
	clock     time.Time
	lines     int
	bytes     int64
	line      []byte
	inTokens  int
	outTokens int
}

func newGen(f *os.File, seed uint64, piece int) *gen {
	g := &gen{
		w:     bufio.NewWriterSize(f, 1<<20),
		rng:   rand.New(rand.NewPCG(seed, 0x5eed_c1a0de)),
		piece: piece,
		clock: time.Date(2026, 11, 21, 5, 4, 44, 0, time.UTC),
	}
	g.session = g.uuid()
	return g
}

// emit writes one line (the JSON object built in g.line).
func (g *gen) emit() {
	g.line = append(g.line, '\n')
	n, _ := g.w.Write(g.line)
	g.bytes += int64(n)
	g.lines++
	g.line = g.line[:0]
}

func (g *gen) raw(s string) { g.line = append(g.line, s...) }
func (g *gen) str(s string) { g.line = appendJSString(g.line, s) }
func (g *gen) int(n int)    { g.line = strconv.AppendInt(g.line, int64(n), 10) }

// tail ends a stream_event: the envelope fields the CLI adds.
func (g *gen) tail(msgID string) {
	g.raw(`,"session_id":`)
	g.str(g.session)
	g.raw(`,"parent_tool_use_id":null,"uuid":`)
	g.str(g.uuid())
	g.raw(`,"api_message_id":`)
	g.str(msgID)
	g.raw(`}`)
	g.emit()
}

func (g *gen) uuid() string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := g.rng.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hx = "0123456789abcdef"
	var s [36]byte
	p := 0
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s[p] = '-'
			p++
		}
		s[p], s[p+1] = hx[c>>4], hx[c&15]
		p += 2
	}
	return string(s[:])
}

func (g *gen) timestamp() string {
	g.clock = g.clock.Add(time.Duration(20+g.rng.IntN(400)) * time.Millisecond)
	return g.clock.Format("2006-01-02T15:04:05.000Z")
}

func (g *gen) transcript(rounds, deltas int) {
	g.initLine()
	var sb strings.Builder
	for r := 1; r <= rounds; r++ {
		msgID := fmt.Sprintf("msg_fake%06d", r)
		toolID := fmt.Sprintf("toolu_fake%06d_0", r)
		g.status()
		g.messageStart(msgID)
		g.blockStart(msgID, 0, `{"text":"","type":"text"}`)
		sb.Reset()
		for i := 0; i < deltas; i++ {
			p := g.textPiece(i == 0)
			sb.WriteString(p)
			g.textDelta(msgID, 0, p)
		}
		g.assistantText(msgID, sb.String())
		g.blockStop(msgID, 0)

		cmd, desc := g.toolCall(r)
		g.raw(`{"id":`)
		g.str(toolID)
		g.raw(`,"input":{},"name":"Bash","type":"tool_use"}`)
		g.blockStart(msgID, 1, string(g.line))
		input := []byte(`{"command":`)
		input = appendJSString(input, cmd)
		input = append(input, `,"description":`...)
		input = appendJSString(input, desc)
		input = append(input, '}')
		for _, part := range splitN(string(input), 4) {
			g.raw(`{"type":"stream_event","event":{"delta":{"partial_json":`)
			g.str(part)
			g.raw(`,"type":"input_json_delta"},"index":1,"type":"content_block_delta"}`)
			g.tail(msgID)
		}
		g.raw(`{"type":"assistant","message":{"content":[{"id":`)
		g.str(toolID)
		g.raw(`,"input":`)
		g.raw(string(input))
		g.raw(`,"name":"Bash","type":"tool_use"}]`)
		g.assistantTail(msgID)
		g.blockStop(msgID, 1)
		g.messageDelta(msgID, "tool_use", deltas+len(input)/4)
		g.messageStop(msgID)
		g.toolResult(toolID, g.toolOutput(r))
	}

	// The closing request: a short answer, end_turn.
	msgID := fmt.Sprintf("msg_fake%06d", rounds+1)
	g.status()
	g.messageStart(msgID)
	g.blockStart(msgID, 0, `{"text":"","type":"text"}`)
	final := []string{"Done", " — all ", strconv.Itoa(rounds), " checks", " pass ✓."}
	for _, p := range final {
		g.textDelta(msgID, 0, p)
	}
	finalText := strings.Join(final, "")
	g.assistantText(msgID, finalText)
	g.blockStop(msgID, 0)
	g.messageDelta(msgID, "end_turn", len(final))
	g.messageStop(msgID)
	g.result(rounds+1, finalText)
}

func (g *gen) status() {
	g.raw(`{"type":"system","subtype":"status","status":"requesting","session_id":`)
	g.str(g.session)
	g.raw(`,"uuid":`)
	g.str(g.uuid())
	g.raw(`}`)
	g.emit()
}

func (g *gen) messageStart(msgID string) {
	g.inTokens += 10
	g.raw(`{"type":"stream_event","event":{"message":{"content":[],"id":`)
	g.str(msgID)
	g.raw(`,"model":"claude-opus-5-5","role":"assistant","stop_reason":null,"stop_sequence":null,"type":"message","usage":{"input_tokens":10,"output_tokens":1}},"type":"message_start"},"session_id":`)
	g.str(g.session)
	g.raw(`,"parent_tool_use_id":null,"uuid":`)
	g.str(g.uuid())
	g.raw(`,"ttft_ms":`)
	g.int(5 + g.rng.IntN(400))
	g.raw(`,"thinking_display":"updates","api_message_id":`)
	g.str(msgID)
	g.raw(`}`)
	g.emit()
}

func (g *gen) blockStart(msgID string, index int, block string) {
	g.line = g.line[:0]
	g.raw(`{"type":"stream_event","event":{"content_block":`)
	g.raw(block)
	g.raw(`,"index":`)
	g.int(index)
	g.raw(`,"type":"content_block_start"}`)
	g.tail(msgID)
}

func (g *gen) textDelta(msgID string, index int, text string) {
	g.raw(`{"type":"stream_event","event":{"delta":{"text":`)
	g.str(text)
	g.raw(`,"type":"text_delta"},"index":`)
	g.int(index)
	g.raw(`,"type":"content_block_delta"}`)
	g.tail(msgID)
}

func (g *gen) blockStop(msgID string, index int) {
	g.raw(`{"type":"stream_event","event":{"index":`)
	g.int(index)
	g.raw(`,"type":"content_block_stop"}`)
	g.tail(msgID)
}

func (g *gen) messageDelta(msgID, stopReason string, outTokens int) {
	g.outTokens += outTokens
	g.raw(`{"type":"stream_event","event":{"delta":{"stop_reason":`)
	g.str(stopReason)
	g.raw(`,"stop_sequence":null},"type":"message_delta","usage":{"output_tokens":`)
	g.int(outTokens)
	g.raw(`}}`)
	g.tail(msgID)
}

func (g *gen) messageStop(msgID string) {
	g.raw(`{"type":"stream_event","event":{"type":"message_stop"}`)
	g.tail(msgID)
}

func (g *gen) assistantText(msgID, text string) {
	g.raw(`{"type":"assistant","message":{"content":[{"text":`)
	g.str(text)
	g.raw(`,"type":"text"}]`)
	g.assistantTail(msgID)
}

// assistantTail closes an assistant frame whose content array is written.
func (g *gen) assistantTail(msgID string) {
	g.raw(`,"id":`)
	g.str(msgID)
	g.raw(`,"model":"claude-opus-5-5","role":"assistant","stop_reason":null,"stop_sequence":null,"type":"message","usage":{"input_tokens":10,"output_tokens":1},"context_management":null},"parent_tool_use_id":null,"session_id":`)
	g.str(g.session)
	g.raw(`,"uuid":`)
	g.str(g.uuid())
	g.raw(`,"timestamp":`)
	g.str(g.timestamp())
	g.raw(`}`)
	g.emit()
}

func (g *gen) toolResult(toolID, output string) {
	g.raw(`{"type":"user","message":{"role":"user","content":[{"tool_use_id":`)
	g.str(toolID)
	g.raw(`,"type":"tool_result","content":`)
	g.str(output)
	g.raw(`,"is_error":false}]},"parent_tool_use_id":null,"session_id":`)
	g.str(g.session)
	g.raw(`,"uuid":`)
	g.str(g.uuid())
	g.raw(`,"timestamp":`)
	g.str(g.timestamp())
	g.raw(`,"tool_use_result":{"stdout":`)
	g.str(output)
	g.raw(`,"stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false},"tool_result_meta":[{"id":`)
	g.str(toolID)
	g.raw(`,"permission_decision":{"decision":"accept","source":"config","reason_type":"rule"}}]}`)
	g.emit()
}

var files = []string{"claudecode/stream.go", "claudecode/event.go", "internal/ui/render.go", "cmd/harness/main.go",
	"claudecode/claudetest/replayer.go", "docs/design.md", "internal/tui/model.go", "README.md"}

func (g *gen) toolCall(r int) (cmd, desc string) {
	f := files[r%len(files)]
	switch r % 4 {
	case 0:
		return fmt.Sprintf("go test ./... -run 'TestRound%d' -count=1 2>&1 | tail -20", r), "Run the focused tests"
	case 1:
		return fmt.Sprintf("grep -rn \"func \\|TODO\" %s | head -40", f), "Find functions and TODOs"
	case 2:
		return fmt.Sprintf("sed -n '%d,%dp' %s", r, r+60, f), "Read part of " + f
	default:
		return fmt.Sprintf("wc -l %s && git log --oneline -5 -- %s", f, f), "Check size and history"
	}
}

func (g *gen) toolOutput(r int) string {
	var b strings.Builder
	n := 4 + g.rng.IntN(12)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%s:%d:\tfunc (s *Stream) step%d(ctx context.Context, line []byte) error { // round %d\n",
			files[(r+i)%len(files)], 10+g.rng.IntN(900), i, r)
	}
	b.WriteString("ok  \tgithub.com/chirality/harness/claudecode\t0.412s")
	return b.String()
}

// splitN cuts s into n pieces of about equal byte length, on rune boundaries.
func splitN(s string, n int) []string {
	var parts []string
	for k := n; k > 1; k-- {
		cut := len(s) / k
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		parts = append(parts, s[:cut])
		s = s[cut:]
	}
	return append(parts, s)
}

// words the text pieces are drawn from: prose, markdown, code, paths with
// backslashes, quotes, tabs, non-ASCII and astral-plane characters.
var words = []string{
	" the", " stream", " parser", " reads", " each", " line", " and", " emits", " an", " event", ".",
	" It", " is", " a", " of", " to", " in", " that", " we", " for", " with", " on", " this", ",",
	" **", "important", "**", " `", "bufio.Reader", "`", " `json.Unmarshal`", "\n\n", "\n", "- ",
	"## ", "Summary", " ```go\n", "func", " main", "()", " {", "\n\t", "}", "\n```\n", " \"quoted\"",
	" C:\\Users\\dev", " \\n", " café", " naïve", " —", " →", " ✓", " 日本語", " 🚀", " λ", " ½", " €",
	" <tag>", " &", " 100%", " x", " y", " z", " ok", " so", " then", " we'll", " can't",
}

func (g *gen) textPiece(first bool) string {
	target := 1 + g.rng.IntN(2*g.piece-1)
	var b []byte
	for len(b) < target {
		w := words[g.rng.IntN(len(words))]
		if first && len(b) == 0 {
			w = strings.TrimLeft(w, " ")
		}
		if len(b) > 0 && len(b)+len(w) > target+2 {
			break
		}
		b = append(b, w...)
	}
	return string(b)
}

// appendJSString appends s as a JSON string the way JSON.stringify does:
// only '"', '\\' and control characters are escaped.
func appendJSString(dst []byte, s string) []byte {
	const hx = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			dst = append(dst, '\\', '"')
		case c == '\\':
			dst = append(dst, '\\', '\\')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hx[c>>4], hx[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

func (g *gen) initLine() {
	g.raw(`{"type":"system","subtype":"init","cwd":"/work/main","session_id":`)
	g.str(g.session)
	g.raw(initTools)
	g.raw(`,"uuid":`)
	g.str(g.uuid())
	g.raw(initTail)
	g.emit()
}

func (g *gen) result(numTurns int, text string) {
	cost := float64(g.inTokens)*15e-6 + float64(g.outTokens)*75e-6
	costStr := strconv.FormatFloat(cost, 'g', -1, 64)
	modelUsage := `{"claude-opus-5-5":{"inputTokens":` + strconv.Itoa(g.inTokens) + `,"outputTokens":` + strconv.Itoa(g.outTokens) +
		`,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"webSearchRequests":0,"costUSD":` + costStr +
		`,"contextWindow":1000000,"maxOutputTokens":128000,"thinkingTokens":0,"cacheCreationEphemeral5mInputTokens":0,"cacheCreationEphemeral1hInputTokens":0,"canonicalModel":"claude-opus-5-5","provider":"firstParty","costBasis":"list"}}`
	dur := int(g.clock.Sub(time.Date(2026, 11, 21, 5, 4, 44, 0, time.UTC)) / time.Millisecond)
	g.raw(`{"duration_api_ms":`)
	g.int(dur - 40)
	g.raw(`,"stop_reason":"end_turn","session_id":`)
	g.str(g.session)
	g.raw(`,"total_cost_usd":`)
	g.raw(costStr)
	g.raw(`,"usage":{"input_tokens":`)
	g.int(g.inTokens)
	g.raw(`,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":`)
	g.int(g.outTokens)
	g.raw(`,"output_tokens_details":{"thinking_tokens":0},"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard","fallback_credit":null},"modelUsage":`)
	g.raw(modelUsage)
	g.raw(`,"permission_denials":[],"terminal_reason":"completed","fast_mode_state":"off","fast_mode_disabled_reason":"sdk_opt_in_required","subagent_stats":{"spawned":0,"requested":{"background":0,"foreground":0,"unset":0},"started_in_background":0,"max_depth":0,"spawned_by_subagents":0,"completed":0,"failed":0,"killed":{"parent":0,"user":0,"system":0},"refused":{"depth_limit":0,"concurrency_limit":0,"budget":0},"by_type":{}},"safety_stops":0,"is_error":false,"num_turns":`)
	g.int(numTurns)
	g.raw(`,"subtype":"success","api_error_status":null,"result":`)
	g.str(text)
	g.raw(`,"ttft_ms":98,"type":"result","duration_ms":`)
	g.int(dur)
	g.raw(`,"uuid":`)
	g.str(g.uuid())
	g.raw(`,"ttft_stream_ms":96,"time_to_request_ms":86,"first_content_frame_ms":97,"queued_turn_count":0,"result_index":0,"model_usage_since_last_result":`)
	g.raw(modelUsage)
	g.raw(`}`)
	g.emit()
}

// The system/init frame of CLI 2.1.329 (recorded), around session_id and uuid.
const initTools = `,"tools":["Task","Bash","CronCreate","CronDelete","CronList","Edit","EnterWorktree","ExitWorktree","ListAgents","Monitor","NotebookEdit","Read","ReportFindings","ScheduleWakeup","SendMessage","Skill","TaskStop","ToolSearch","WebFetch","WebSearch","Workflow","Write"],"mcp_servers":[],"model":"claude-opus-5-5","permissionMode":"default","slash_commands":["deep-research","dataviz","update-config","verify","debug","code-review","simplify","batch","fewer-permission-prompts","doctor","loop","claude-api","workflow-authoring","run","run-skill-generator","plugin-authoring","agents","auto-mode-setup","autocompact","clear","color","compact","config","output-style","context","effort","fast","focus","heapdump","init","mcp","model","__remote-workflow","workflow-launch-exec","reload-plugins","reload-skills","rename","security-review","usage","insights","recap","goal","list-agents","team-onboarding"],"terminal_slash_commands":["doctor","color","focus","reload-plugins"],"apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.329","output_style":"default","agents":["claude","Explore","general-purpose","Plan","statusline-setup"],"skills":["deep-research","dataviz","update-config","verify","debug","code-review","simplify","batch","fewer-permission-prompts","doctor","loop","claude-api","workflow-authoring","run","run-skill-generator","plugin-authoring"],"plugins":[{"name":"cc-plugin-agents-md","path":"builtin","source":"cc-plugin-agents-md@builtin"},{"name":"cc-plugin-privacy","path":"builtin","source":"cc-plugin-privacy@builtin"},{"name":"cc-plugin-plugin-authoring","path":"builtin","source":"cc-plugin-plugin-authoring@builtin"}],"capabilities":["interrupt_receipt_v1","interrupt_cancel_queued_v1","interrupt_send_now_v1","interrupt_requeue_taken_v1","msg_lifecycle_v1","request_marker_lists_v1","ask_user_question_unanswered_v1","lifecycle_wakeup_source_v1","sdk_mcp_tools_list_changed","sdk_mcp_manifests","mcp_read_resource_v1","mcp_tool_ui_meta_v1","ui_surface_v1","mcp_call_result_not_for_model_v1","mcp_call_check_permissions_v1","voice_call_talk_line_v1","withdrawn_files_note_v2","ui_pane_widget_v1","reload_plugins_refuse_if_busy_v1","get_usage_detached_v1","silent_resend_files_v1"],"analytics_disabled":true,"product_feedback_disabled":true,"served_by_anthropic":false`

const initTail = `,"memory_paths":{"auto":"/root/.claude/projects/-work-main/memory/"},"original_cwd":"/work/main","additional_directories":[],"messaging_socket_path":"/tmp/cc-socks/3310.sock","fast_mode_state":"off","fast_mode_disabled_reason":"sdk_opt_in_required","per_turn_effort_active":true,"ultrathink_available":false,"ultrathink_typed_raises":false,"view_mode":"default"}`
