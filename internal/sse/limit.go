package sse

import (
	"errors"
	"sync"
)

// Defaults of NewLimiter: streams open at once per server and per key
// (a session). An idle stream costs a few tens of KB; a stuck one at
// most its write buffer and one copy buffer until WriteTimeout drops it
// (BENCHMARKS.md has the figures).
const (
	DefaultMaxStreams       = 256
	DefaultMaxStreamsPerKey = 64
	// RetryAfter is the Retry-After, in seconds, a door sends with the
	// 503 of ErrTooManyStreams.
	RetryAfter = 5
)

// ErrTooManyStreams is Acquire's answer beyond a cap: the door answers
// 503 with Retry-After.
var ErrTooManyStreams = errors.New("too many event streams open; retry later")

// Limiter caps the streams a server holds open, in all and per key. It is
// safe for concurrent use.
type Limiter struct {
	max, perKey int

	mu    sync.Mutex
	total int
	keys  map[string]int
}

// NewLimiter returns a Limiter of max streams in all and perKey per key
// (0 = the defaults; a negative cap is no cap).
func NewLimiter(max, perKey int) *Limiter {
	if max == 0 {
		max = DefaultMaxStreams
	}
	if perKey == 0 {
		perKey = DefaultMaxStreamsPerKey
	}
	return &Limiter{max: max, perKey: perKey, keys: map[string]int{}}
}

// Acquire takes a slot for one stream of key, or returns
// ErrTooManyStreams. release gives the slot back; it is safe to call more
// than once.
func (l *Limiter) Acquire(key string) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if (l.max > 0 && l.total >= l.max) || (l.perKey > 0 && l.keys[key] >= l.perKey) {
		return func() {}, ErrTooManyStreams
	}
	l.total++
	l.keys[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.total--
			if l.keys[key]--; l.keys[key] == 0 {
				delete(l.keys, key)
			}
		})
	}, nil
}

// Open returns how many streams are open in all and for key.
func (l *Limiter) Open(key string) (total, forKey int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.keys[key]
}
