package claudecode_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/event"
)

// benchTranscript is a turn like bench/gentranscript's, built from lines
// the real CLI printed: rounds of text deltas, each closed by an assistant
// frame, then a result.
func benchTranscript(b *testing.B, rounds, deltas int) []byte {
	b.Helper()
	raw, err := os.ReadFile("testdata/transcripts/text.ndjson")
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	var init, delta, assistant, result string
	for _, l := range lines {
		switch {
		case strings.Contains(l, `"subtype":"init"`):
			init = l
		case strings.Contains(l, `"text_delta"`) && delta == "":
			delta = l
		case strings.HasPrefix(l, `{"type":"assistant"`):
			assistant = l
		case strings.Contains(l, `"type":"result"`):
			result = l
		}
	}
	var buf bytes.Buffer
	buf.WriteString(init + "\n")
	for r := 0; r < rounds; r++ {
		for d := 0; d < deltas; d++ {
			buf.WriteString(delta + "\n")
		}
		buf.WriteString(assistant + "\n")
	}
	buf.WriteString(result + "\n")
	return buf.Bytes()
}

// BenchmarkDecoder measures the parser alone on an in-memory transcript.
func BenchmarkDecoder(b *testing.B) {
	data := benchTranscript(b, 20, 1000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	lines := bytes.Count(data, []byte("\n"))
	defer reportCPU(b, lines)()
	for b.Loop() {
		d := claudecode.NewDecoder(bytes.NewReader(data), claudecode.DecoderOptions{SessionID: "bench"})
		n := 0
		for d.Next() {
			n++
		}
		if n < 20000 {
			b.Fatalf("%d events", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*lines), "ns/line")
}

// reportCPU reports, when the function it returns is called, this
// process's CPU time (not a child's) and context switches per line of
// the b.N transcripts of lines lines: figures that hold up better than
// wall time on a shared machine.
func reportCPU(b *testing.B, lines int) func() {
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	return func() {
		var after syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		n := float64(b.N * lines)
		cpu := func(r *syscall.Rusage) int64 { return r.Utime.Nano() + r.Stime.Nano() }
		b.ReportMetric(float64(cpu(&after)-cpu(&before))/n, "cpu-ns/line")
		b.ReportMetric(float64(after.Nvcsw-before.Nvcsw+after.Nivcsw-before.Nivcsw)/n, "csw/line")
	}
}

// BenchmarkDecodeAndEncode is the whole `harness turn --json` path minus
// the pipe: decode every line, encode every event.
func BenchmarkDecodeAndEncode(b *testing.B) {
	data := benchTranscript(b, 20, 1000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var out []byte
	for b.Loop() {
		d := claudecode.NewDecoder(bytes.NewReader(data), claudecode.DecoderOptions{SessionID: "bench"})
		for d.Next() {
			out = d.Event().AppendJSON(out[:0])
		}
	}
}

// BenchmarkLineToEventLatency measures the driver's added latency: from a
// line written by the child (stamped with the wall clock it was written
// at) to the event returned by Turn.Next. Lines are paced, 0.5 ms apart,
// so it measures latency and not queueing. Reports p50/p99/max in µs.
func BenchmarkLineToEventLatency(b *testing.B) {
	script := fakeChildScriptB(b, "latency")
	mgr := fastManager()
	var lat []time.Duration
	for b.Loop() {
		tr, err := mgr.StartTurn(context.Background(), "lat", "go", claudecode.TurnOpts{Binary: script})
		if err != nil {
			b.Fatal(err)
		}
		for tr.Next() {
			e := tr.Event()
			if e.Type != event.TypeChatDelta {
				continue
			}
			now := time.Now().UnixNano()
			sent, err := strconv.ParseInt(e.Text, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Duration(now-sent))
		}
		if tr.Err() != nil {
			b.Fatal(tr.Err())
		}
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(pct(1), "max-µs")
	b.ReportMetric(float64(len(lat)), "samples")
}

func fakeChildScriptB(b *testing.B, mode string) string {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	path := b.TempDir() + "/claude"
	script := "#!/bin/sh\nexport CLAUDECODE_TEST_CHILD=" + mode + "\nexec '" + exe + "' \"$@\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkRawPipeLatency is the floor BenchmarkLineToEventLatency is
// compared with: the same child, read with a plain bufio.Reader and no
// driver. The driver's added latency is the difference.
func BenchmarkRawPipeLatency(b *testing.B) {
	script := fakeChildScriptB(b, "latency")
	var lat []time.Duration
	for b.Loop() {
		cmd := exec.Command(script)
		cmd.Stdin = strings.NewReader("{}\n")
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReader(out)
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				break
			}
			now := time.Now().UnixNano()
			i := bytes.Index(line, []byte(`"text":"`))
			if i < 0 {
				continue
			}
			rest := line[i+8:]
			sent, err := strconv.ParseInt(string(rest[:bytes.IndexByte(rest, '"')]), 10, 64)
			if err != nil {
				continue
			}
			lat = append(lat, time.Duration(now-sent))
		}
		_ = cmd.Wait()
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(pct(1), "max-µs")
}

// BenchmarkTurnThroughput is the driver's whole event path on a replayed
// child: spawn, decode every line, and everything Turn does to an event
// before Next returns it (scrubbing included). The child writes the
// transcript as fast as the pipe takes it.
func BenchmarkTurnThroughput(b *testing.B) {
	data := benchTranscript(b, 20, 1000)
	path := b.TempDir() + "/turn.ndjson"
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	script, err := claudetest.WriteReplayerScript(b.TempDir(), path)
	if err != nil {
		b.Fatal(err)
	}
	mgr := fastManager()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	defer reportCPU(b, bytes.Count(data, []byte("\n")))()
	for b.Loop() {
		tr, err := mgr.StartTurn(context.Background(), "throughput", "go", claudecode.TurnOpts{Binary: script})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for tr.Next() {
			n++
		}
		if tr.Err() != nil || n < 20000 {
			b.Fatalf("%d events, %v", n, tr.Err())
		}
	}
}
