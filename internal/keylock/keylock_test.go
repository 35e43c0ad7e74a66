package keylock

import (
	"sync"
	"testing"
	"time"
)

func TestLockPerKey(t *testing.T) {
	var m Map
	unlockA := m.Lock("a")
	// Another key is not held up.
	unlockB := m.Lock("b")
	unlockB()
	got := make(chan struct{})
	go func() {
		u := m.Lock("a")
		close(got)
		u()
	}()
	select {
	case <-got:
		t.Fatal("a second holder of key a got the lock while the first held it")
	case <-time.After(50 * time.Millisecond):
	}
	unlockA()
	<-got
	// Every entry is dropped once nobody holds or waits.
	deadline := time.Now().Add(5 * time.Second)
	for m.Len() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := m.Len(); n != 0 {
		t.Fatalf("%d keys left after every unlock", n)
	}
}

func TestExclusiveUnderContention(t *testing.T) {
	var m Map
	var wg sync.WaitGroup
	inside := map[string]int{}
	var mu sync.Mutex
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := string(rune('a' + i%3))
			u := m.Lock(key)
			mu.Lock()
			inside[key]++
			if inside[key] != 1 {
				t.Errorf("%d holders of %s at once", inside[key], key)
			}
			mu.Unlock()
			mu.Lock()
			inside[key]--
			mu.Unlock()
			u()
		}()
	}
	wg.Wait()
	if n := m.Len(); n != 0 {
		t.Fatalf("%d keys left", n)
	}
}
