// Command naivejson is the "naive Go parser" baseline of the benchmark: it
// reads a stream-json transcript with a bufio.Reader (lines of any length)
// and decodes every line with encoding/json into a map[string]any, the
// obvious first implementation. It reproduces the issue author's figure for
// such a parser (about 0.8 s on the 54 MB transcript on their machine).
//
//	naivejson [-file bench/out/transcript.ndjson]
//	naivejson -claude-bin bench/out/claude-replay   (CLAUDETEST_REPLAY set)
//	naivejson -bare -claude-bin bench/out/claude-replay
//
// With -bare it decodes nothing: it reads the stream line by line from the
// pipe into nothing (bufio.Reader.ReadSlice, no copy), looking only for
// the result line to close stdin. That is the floor of any consumer of
// the same stream: compare.sh's "bare" side.
//
// With -file it parses the file directly. With -claude-bin it does what a
// driver does end to end: starts the stand-in claude, sends a user message
// on its stdin, parses its stdout until the result line, closes stdin and
// waits for it to exit.
//
// Prints one JSON line: {"lines":N,"types":{...},"seconds":S,"peakRssMB":M}
// where peakRssMB is this process's own getrusage(RUSAGE_SELF) max RSS.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	file := flag.String("file", "bench/out/transcript.ndjson", "transcript to parse")
	claudeBin := flag.String("claude-bin", "", "run this stand-in claude and parse its stdout instead of -file")
	bare := flag.Bool("bare", false, "decode nothing: read the lines into nothing (the floor)")
	flag.Parse()

	start := time.Now()
	var (
		src   io.Reader
		cmd   *exec.Cmd
		stdin io.WriteCloser
	)
	if *claudeBin == "" {
		f, err := os.Open(*file)
		check(err)
		defer f.Close()
		src = f
	} else {
		cmd = exec.Command(*claudeBin, "-p", "--input-format", "stream-json", "--output-format", "stream-json",
			"--verbose", "--include-partial-messages")
		cmd.Stderr = os.Stderr
		var err error
		stdin, err = cmd.StdinPipe()
		check(err)
		out, err := cmd.StdoutPipe()
		check(err)
		check(cmd.Start())
		_, err = io.WriteString(stdin, `{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"text","text":"go"}]},"parent_tool_use_id":null}`+"\n")
		check(err)
		src = out
	}

	br := bufio.NewReaderSize(src, 64<<10)
	lines := 0
	types := map[string]int{}
	for *bare {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 && !errors.Is(err, bufio.ErrBufferFull) {
			lines++
			// A quote inside a JSON string is escaped, so this unescaped
			// member can only be the result frame's own type.
			if stdin != nil && bytes.Contains(line, []byte(`"type":"result"`)) {
				types["result"]++
				stdin.Close()
				stdin = nil
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			check(err)
		}
	}
	for !*bare {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			var m map[string]any
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				fmt.Fprintf(os.Stderr, "naivejson: line %d: %v\n", lines+1, jerr)
				os.Exit(1)
			}
			lines++
			t, _ := m["type"].(string)
			types[t]++
			if t == "result" && stdin != nil {
				stdin.Close() // the turn is over: let claude exit
				stdin = nil
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		check(err)
	}
	if cmd != nil {
		if stdin != nil {
			stdin.Close()
		}
		check(cmd.Wait())
	}
	secs := time.Since(start).Seconds()
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	b, _ := json.Marshal(map[string]any{"lines": lines, "types": types, "seconds": round3(secs), "peakRssMB": round3(float64(ru.Maxrss) / 1024)})
	fmt.Println(string(b))
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "naivejson:", err)
		os.Exit(1)
	}
}
