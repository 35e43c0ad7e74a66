package usage

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
)

// Totals is what a set of turns used. Turns counts the turns that ended
// (session:complete or session:error).
type Totals struct {
	CostUSD          float64 `json:"costUsd"`
	InputTokens      int64   `json:"inputTokens"`
	OutputTokens     int64   `json:"outputTokens"`
	CacheReadTokens  int64   `json:"cacheReadTokens"`
	CacheWriteTokens int64   `json:"cacheWriteTokens"`
	Turns            int64   `json:"turns"`
}

// Add adds o to t.
func (t *Totals) Add(o Totals) {
	t.CostUSD += o.CostUSD
	t.InputTokens += o.InputTokens
	t.OutputTokens += o.OutputTokens
	t.CacheReadTokens += o.CacheReadTokens
	t.CacheWriteTokens += o.CacheWriteTokens
	t.Turns += o.Turns
}

// Group is the totals of one key of a Report.
type Group struct {
	Key string `json:"key"`
	Totals
}

// Report is the answer of GET /api/harness/usage: the total and, when
// grouped, one group per key (largest cost first, then key).
type Report struct {
	Total  Totals  `json:"total"`
	Groups []Group `json:"groups"`
	// RateLimits are the latest state of each limit seen (by engine and
	// limit), newest first.
	RateLimits []event.RateLimit `json:"rateLimits"`
}

// Groupings of a Query.
const (
	BySession = "session"
	ByEngine  = "engine"
	ByModel   = "model"
	ByDay     = "day"
)

// ValidBy says whether by is a grouping ("" = none).
func ValidBy(by string) bool {
	switch by {
	case "", BySession, ByEngine, ByModel, ByDay:
		return true
	}
	return false
}

// Query selects what a Report counts.
type Query struct {
	// By groups the report (BySession, ByEngine, ByModel, ByDay; ""
	// none).
	By string
	// Since leaves out what happened before it (at the hour: the index
	// keeps hours), zero = everything.
	Since time.Time
	// SessionID, when set, counts that session only.
	SessionID string
}

// bucket is one hour of one engine and model in one session.
type bucket struct {
	Hour   int64  `json:"h"` // Unix seconds, at the hour (UTC)
	Engine string `json:"e"`
	Model  string `json:"m"`
	Totals
}

// logState is what the index knows of one session's event log: how far
// it was read and what it added up to.
type logState struct {
	Root   string `json:"root"`
	Offset int64  `json:"offset"` // bytes read: the end of the last whole line
	Engine string `json:"engine"` // of the last session:init
	Model  string `json:"model"`
	// TurnUsage: the turn being read had a usage:update (else its
	// session:complete's usage counts, as in logs older than the event).
	TurnUsage bool              `json:"turnUsage"`
	Buckets   []bucket          `json:"buckets"`
	Limits    []event.RateLimit `json:"limits,omitempty"`
	LimitsAt  map[string]int64  `json:"limitsAt,omitempty"` // engine/limit → when seen (ms)
	byKey     map[bucketKey]int // index into Buckets
}

type bucketKey struct {
	hour          int64
	engine, model string
}

// Index is the usage of the event logs of sessions, kept as they grow:
// each log is read once, then from where it was left. It is safe for
// concurrent use. Save and Load keep it in a file across restarts.
type Index struct {
	mu   sync.Mutex
	logs map[string]*logState // by session id
}

// NewIndex returns an empty index.
func NewIndex() *Index { return &Index{logs: map[string]*logState{}} }

// indexFile is the persisted form.
type indexFile struct {
	Version int                  `json:"version"`
	Logs    map[string]*logState `json:"logs"`
}

// Load reads an index Save wrote; a missing or unreadable file gives an
// empty index (it is a cache: the logs are the truth).
func Load(path string) *Index {
	ix := NewIndex()
	data, err := os.ReadFile(path)
	if err != nil {
		return ix
	}
	var f indexFile
	if json.Unmarshal(data, &f) != nil || f.Version != 1 {
		return ix
	}
	for id, st := range f.Logs {
		if st == nil {
			continue
		}
		st.rekey()
		ix.logs[id] = st
	}
	return ix
}

// Save writes the index to path atomically (0600).
func (ix *Index) Save(path string) error {
	ix.mu.Lock()
	data, err := json.Marshal(indexFile{Version: 1, Logs: ix.logs})
	ix.mu.Unlock()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (st *logState) rekey() {
	st.byKey = make(map[bucketKey]int, len(st.Buckets))
	for i, b := range st.Buckets {
		st.byKey[bucketKey{b.Hour, b.Engine, b.Model}] = i
	}
}

func (st *logState) bucket(ms int64) *bucket {
	h := (ms / 1000) / 3600 * 3600
	k := bucketKey{h, st.Engine, st.Model}
	if i, ok := st.byKey[k]; ok {
		return &st.Buckets[i]
	}
	st.Buckets = append(st.Buckets, bucket{Hour: h, Engine: st.Engine, Model: st.Model})
	st.byKey[k] = len(st.Buckets) - 1
	return &st.Buckets[len(st.Buckets)-1]
}

// Log is one session's event log to count.
type Log struct {
	SessionID string
	Root      string // its project root
	Path      string
}

// Logs lists the event logs of the sessions of each project root.
func Logs(roots []string, sessionsDir string) []Log {
	var out []Log
	for _, root := range roots {
		dir := filepath.Join(root, sessionsDir)
		des, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, de := range des {
			name := de.Name()
			if id, ok := strings.CutSuffix(name, ".events.jsonl"); ok && de.Type().IsRegular() {
				out = append(out, Log{SessionID: id, Root: root, Path: filepath.Join(dir, name)})
			}
		}
	}
	return out
}

// ThreadLogs lists the event logs kept at a thread's place
// (<root>/<threadsDir>/<id>/events.jsonl: the sessions `harness rpc`
// made, whose one log is their thread's).
func ThreadLogs(roots []string, threadsDir string) []Log {
	var out []Log
	for _, root := range roots {
		dir := filepath.Join(root, threadsDir)
		des, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, de := range des {
			if !de.IsDir() {
				continue
			}
			p := filepath.Join(dir, de.Name(), "events.jsonl")
			if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
				out = append(out, Log{SessionID: de.Name(), Root: root, Path: p})
			}
		}
	}
	return out
}

// Update reads what each log gained since the index last read it (the
// whole log when it shrank: rewritten), and says whether it read
// anything. Logs the index knows that are not among logs are kept;
// Forget drops them.
func (ix *Index) Update(logs []Log) (changed bool) {
	for _, l := range logs {
		if ix.update(l) {
			changed = true
		}
	}
	return changed
}

// Forget drops what the index knows of the sessions not in keep whose
// project root is one of roots (deleted sessions).
func (ix *Index) Forget(roots []string, keep []Log) (changed bool) {
	ids := make(map[string]bool, len(keep))
	for _, l := range keep {
		ids[l.SessionID] = true
	}
	rs := make(map[string]bool, len(roots))
	for _, r := range roots {
		rs[r] = true
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for id, st := range ix.logs {
		if rs[st.Root] && !ids[id] {
			delete(ix.logs, id)
			changed = true
		}
	}
	return changed
}

func (ix *Index) update(l Log) bool {
	fi, err := os.Stat(l.Path)
	if err != nil {
		return false
	}
	ix.mu.Lock()
	st := ix.logs[l.SessionID]
	if st != nil && st.Root == l.Root && st.Offset == fi.Size() {
		ix.mu.Unlock()
		return false
	}
	var work logState
	if st != nil && st.Root == l.Root && st.Offset < fi.Size() {
		work = st.clone()
	} else {
		work = logState{Root: l.Root, byKey: map[bucketKey]int{}}
	}
	ix.mu.Unlock()
	// Read outside the lock: a copy, put back when done.
	if err := work.read(l.Path, fi.ModTime().UnixMilli()); err != nil {
		return false
	}
	ix.mu.Lock()
	ix.logs[l.SessionID] = &work
	ix.mu.Unlock()
	return true
}

func (st *logState) clone() logState {
	c := *st
	c.Buckets = append([]bucket(nil), st.Buckets...)
	c.Limits = append([]event.RateLimit(nil), st.Limits...)
	c.LimitsAt = make(map[string]int64, len(st.LimitsAt))
	for k, v := range st.LimitsAt {
		c.LimitsAt[k] = v
	}
	c.rekey()
	return c
}

// Marks that say a line may be one the index counts: the rest are not
// decoded.
var marks = [][]byte{[]byte(`"usage:update"`), []byte(`"session:init"`), []byte(`"session:complete"`),
	[]byte(`"session:error"`), []byte(`"rate_limit"`)}

// read counts the log's whole lines from st.Offset on. modMS is the
// time of events without one (logs older than event times).
func (st *logState) read(path string, modMS int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(st.Offset, io.SeekStart); err != nil {
		return err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line (a large tool result): none of the counted
			// events is that long; skip it whole.
			n := int64(len(line))
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				n += int64(len(line))
			}
			if err != nil {
				return nil // torn: read again next time
			}
			st.Offset += n
			continue
		}
		if err != nil {
			return nil // EOF, or a torn last line: read again next time
		}
		st.Offset += int64(len(line))
		counted := false
		for _, m := range marks {
			if bytes.Contains(line, m) {
				counted = true
				break
			}
		}
		if counted {
			st.line(line, modMS)
		}
	}
}

// flatLine is what the index reads of an event line, in one decode: the
// wire form is flat, and the fields of the counted events do not clash.
type flatLine struct {
	Type             event.Type      `json:"type"`
	Time             int64           `json:"timestamp"`
	Engine           string          `json:"engine"`
	Model            string          `json:"model"`
	InputTokens      int64           `json:"inputTokens"`
	OutputTokens     int64           `json:"outputTokens"`
	CacheReadTokens  int64           `json:"cacheReadTokens"`
	CacheWriteTokens int64           `json:"cacheWriteTokens"`
	CostUSD          float64         `json:"costUsd"`
	Usage            json.RawMessage `json:"usage"`
	Limit            string          `json:"limit"`
	UsedPercent      float64         `json:"usedPercent"`
	Status           string          `json:"status"`
	ResetsAt         int64           `json:"resetsAt"`
	WindowMinutes    int64           `json:"windowMinutes"`
}

// line counts one event line.
func (st *logState) line(line []byte, modMS int64) {
	var ev flatLine
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	at := ev.Time
	if at == 0 {
		at = modMS
	}
	switch ev.Type {
	case event.TypeSessionInit:
		st.Engine, st.Model = ev.Engine, ev.Model
		if st.Engine == "" {
			st.Engine = "claude-code"
		}
	case event.TypeUsageUpdate:
		st.TurnUsage = true
		b := st.bucketFor(at, ev.Engine, ev.Model)
		b.Add(Totals{CostUSD: ev.CostUSD, InputTokens: ev.InputTokens, OutputTokens: ev.OutputTokens,
			CacheReadTokens: ev.CacheReadTokens, CacheWriteTokens: ev.CacheWriteTokens})
	case event.TypeSessionComplete, event.TypeSessionError:
		b := st.bucket(at)
		b.Turns++
		if !st.TurnUsage {
			// A log from before usage:update: the turn's own figures.
			var raw json.RawMessage
			if ev.Type == event.TypeSessionComplete {
				raw = ev.Usage
			}
			b.Add(FromUsageObject(raw, ev.CostUSD))
		}
		st.TurnUsage = false
	case event.TypeRateLimit:
		rl := event.RateLimit{Engine: ev.Engine, Limit: ev.Limit, UsedPercent: ev.UsedPercent, Status: ev.Status,
			ResetsAt: ev.ResetsAt, WindowMinutes: ev.WindowMinutes}
		k := rl.Engine + "/" + rl.Limit
		if st.LimitsAt == nil {
			st.LimitsAt = map[string]int64{}
		}
		if _, ok := st.LimitsAt[k]; !ok {
			st.Limits = append(st.Limits, rl)
		} else {
			for i := range st.Limits {
				if st.Limits[i].Engine == rl.Engine && st.Limits[i].Limit == rl.Limit {
					st.Limits[i] = rl
				}
			}
		}
		st.LimitsAt[k] = at
	}
}

// bucketFor is the bucket of the update's own engine and model (the
// turn's when it names none).
func (st *logState) bucketFor(ms int64, engine, model string) *bucket {
	e, m := st.Engine, st.Model
	if engine != "" {
		st.Engine = engine
	}
	if model != "" {
		st.Model = model
	}
	b := st.bucket(ms)
	st.Engine, st.Model = e, m
	return b
}

// FromUsageObject reads an engine's usage object of session:complete, in
// any of the engines' spellings (Claude's and the native loop's
// snake_case, ACP's camelCase), with the turn's cost.
func FromUsageObject(raw json.RawMessage, cost float64) Totals {
	var u struct {
		In          int64 `json:"input_tokens"`
		Out         int64 `json:"output_tokens"`
		CacheRead   int64 `json:"cache_read_input_tokens"`
		CacheWrite  int64 `json:"cache_creation_input_tokens"`
		InC         int64 `json:"inputTokens"`
		OutC        int64 `json:"outputTokens"`
		CacheReadC  int64 `json:"cachedReadTokens"`
		CacheWriteC int64 `json:"cachedWriteTokens"`
	}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &u)
	}
	return Totals{CostUSD: cost, InputTokens: u.In + u.InC, OutputTokens: u.Out + u.OutC,
		CacheReadTokens: u.CacheRead + u.CacheReadC, CacheWriteTokens: u.CacheWrite + u.CacheWriteC}
}

// Report adds up what the index knows of the sessions of roots (all it
// knows when roots is nil) as q asks.
func (ix *Index) Report(roots []string, q Query) Report {
	var rs map[string]bool
	if roots != nil {
		rs = make(map[string]bool, len(roots))
		for _, r := range roots {
			rs[r] = true
		}
	}
	since := int64(0)
	if !q.Since.IsZero() {
		since = q.Since.Unix() / 3600 * 3600
	}
	groups := map[string]*Totals{}
	var rep Report
	type seen struct {
		rl event.RateLimit
		at int64
	}
	limits := map[string]seen{}
	ix.mu.Lock()
	for id, st := range ix.logs {
		if rs != nil && !rs[st.Root] {
			continue
		}
		if q.SessionID != "" && id != q.SessionID {
			continue
		}
		for i := range st.Buckets {
			b := &st.Buckets[i]
			if b.Hour < since {
				continue
			}
			rep.Total.Add(b.Totals)
			var key string
			switch q.By {
			case BySession:
				key = id
			case ByEngine:
				key = b.Engine
			case ByModel:
				key = b.Model
			case ByDay:
				key = time.Unix(b.Hour, 0).UTC().Format(time.DateOnly)
			default:
				continue
			}
			g := groups[key]
			if g == nil {
				g = &Totals{}
				groups[key] = g
			}
			g.Add(b.Totals)
		}
		for _, rl := range st.Limits {
			k := rl.Engine + "/" + rl.Limit
			at := st.LimitsAt[k]
			if at/1000 < since {
				continue
			}
			if cur, ok := limits[k]; !ok || at > cur.at {
				limits[k] = seen{rl, at}
			}
		}
	}
	ix.mu.Unlock()
	rep.Groups = make([]Group, 0, len(groups))
	for k, t := range groups {
		rep.Groups = append(rep.Groups, Group{Key: k, Totals: *t})
	}
	sort.Slice(rep.Groups, func(i, j int) bool {
		a, b := rep.Groups[i], rep.Groups[j]
		if q.By == ByDay {
			return a.Key < b.Key
		}
		if a.CostUSD != b.CostUSD {
			return a.CostUSD > b.CostUSD
		}
		return a.Key < b.Key
	})
	ls := make([]seen, 0, len(limits))
	for _, s := range limits {
		ls = append(ls, s)
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].at > ls[j].at })
	rep.RateLimits = make([]event.RateLimit, 0, len(ls))
	for _, s := range ls {
		rep.RateLimits = append(rep.RateLimits, s.rl)
	}
	return rep
}

// ParseSince reads a query's since: RFC 3339, or a date (YYYY-MM-DD,
// midnight UTC).
func ParseSince(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("since must be RFC 3339 or YYYY-MM-DD, not %q", s)
}

// Refresh brings the index up to date with the event logs of the
// sessions of roots (in each root's sessionsDir, and the threads'
// logs of `harness rpc`'s sessions), forgetting deleted
// ones, and saves it to savePath when it changed ("" = not saved).
func (ix *Index) Refresh(roots []string, sessionsDir, savePath string) error {
	logs := append(Logs(roots, sessionsDir), ThreadLogs(roots, session.ThreadsDir)...)
	changed := ix.Update(logs)
	if ix.Forget(roots, logs) {
		changed = true
	}
	if changed && savePath != "" {
		return ix.Save(savePath)
	}
	return nil
}

// IndexFile is the index's file in a state directory.
func IndexFile(stateDir string) string { return filepath.Join(stateDir, "usage-index.json") }
