// Package keylock is a mutex per key (a session ID), made when first
// locked and dropped when its last holder and waiter are gone, so a
// long-running server holds no lock for a session nobody touches.
package keylock

import "sync"

// Map is a set of per-key mutexes. The zero value is ready to use; a Map
// must not be copied after first use.
type Map struct {
	mu    sync.Mutex
	locks map[string]*entry
}

type entry struct {
	mu sync.Mutex
	n  int // holders and waiters
}

// Lock locks key's mutex, waiting while another holder has it, and
// returns the unlock (call it exactly once).
func (m *Map) Lock(key string) (unlock func()) {
	m.mu.Lock()
	if m.locks == nil {
		m.locks = map[string]*entry{}
	}
	l := m.locks[key]
	if l == nil {
		l = &entry{}
		m.locks[key] = l
	}
	l.n++
	m.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		m.mu.Lock()
		if l.n--; l.n == 0 {
			delete(m.locks, key)
		}
		m.mu.Unlock()
	}
}

// Len is the number of keys locked or waited for.
func (m *Map) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.locks)
}
