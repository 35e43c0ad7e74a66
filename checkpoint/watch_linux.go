package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// watcher knows which paths of a project changed since it was last
// asked (take), without walking the tree: an inotify watch (fsnotify) on
// every directory a snapshot can hold files of. New directories are
// watched as their creation is read, and listed as changed, so a
// snapshot walks them (their files created before the watch was added
// included). When it can no longer be sure of the list (the kernel's
// queue overflowed, a watch could not be added, a watched directory was
// renamed, an error) it says why, and the next snapshot walks the tree
// and starts a new watcher.
type watcher struct {
	root, cookies string // absolute: the project, the directory of sync files
	fw            *fsnotify.Watcher
	done          chan struct{} // closed when loop returns
	inject        chan error    // tests: an error as if from fsnotify
	maxTouched    int

	mu      sync.Mutex
	touched map[string]struct{} // slash paths relative to root
	dirs    map[string]bool     // watched directories (relative; "" = root)
	why     string              // set once the list is not to be trusted
	nonce   string              // names this watcher's sync files apart from other stores' (other processes)
	seq     uint64
	waiters map[string]chan struct{} // sync file → closed when its event is read
	// cookie is this watcher's sync file as it is named now ("" before
	// the first take). Each take renames it to the next name: a rename
	// raises its event as a create did, without a new file (creating one
	// costs the file system an inode, up to 0.5 ms of CPU on a busy
	// ext4, before every turn); close removes it.
	cookie string
}

// watchers numbers the watchers of this process.
var watchers atomic.Uint64

// syncTimeout bounds the wait for a sync file's event (then the snapshot
// walks instead).
const syncTimeout = 10 * time.Second

// networkFS are filesystems whose changes made by other machines raise
// no inotify event (statfs f_type).
var networkFS = map[int64]string{
	0x6969: "nfs", 0x517b: "smb", 0xff534d42: "cifs", 0xfe534d42: "smb2",
	0x01021997: "9p", 0x65735546: "fuse", 0x00c36400: "ceph", 0x5346414f: "afs",
}

// startWatcher watches root's directories (not .git, .chirality,
// .harness/threads nor nested repositories) and cookies. It returns why
// not when it cannot cover the tree.
func startWatcher(root, cookies string, maxTouched int) (*watcher, string) {
	var sfs unix.Statfs_t
	if err := unix.Statfs(root, &sfs); err == nil {
		if name, ok := networkFS[int64(sfs.Type)]; ok {
			return nil, "network filesystem (" + name + ")"
		}
	}
	if err := os.MkdirAll(cookies, 0o700); err != nil {
		return nil, "watcher: " + err.Error()
	}
	removeDeadSyncFiles(cookies)
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, watchWhy(err)
	}
	w := &watcher{
		root: root, cookies: cookies, fw: fw, maxTouched: maxTouched,
		done: make(chan struct{}), inject: make(chan error),
		touched: map[string]struct{}{}, dirs: map[string]bool{}, waiters: map[string]chan struct{}{},
		nonce: strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(watchers.Add(1), 10) + "-",
	}
	if err := fw.Add(cookies); err != nil {
		fw.Close()
		return nil, watchWhy(err)
	}
	if err := w.addTree(""); err != nil {
		fw.Close()
		return nil, watchWhy(err)
	}
	go w.loop()
	return w, ""
}

// removeDeadSyncFiles removes the sync files that processes now gone left
// in dir (a watcher keeps one while it lives; a killed process cannot
// remove its own). A sync file is named after its process's ID; one that
// is removed under a live watcher anyway is made again at its next take.
func removeDeadSyncFiles(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		pidText, _, ok := strings.Cut(e.Name(), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func watchWhy(err error) string {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE) {
		return "watch limit (fs.inotify.max_user_watches, max_user_instances): " + err.Error()
	}
	return "watcher: " + err.Error()
}

// close stops the watcher and waits for its goroutine. Safe to call
// more than once.
func (w *watcher) close() {
	w.fw.Close()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cookie != "" {
		os.Remove(w.cookie)
		w.cookie = ""
	}
}

// addTree watches directory rel and those below it (a nested
// repository's files are not watched: a snapshot of it walks).
func (w *watcher) addTree(rel string) error {
	return filepath.WalkDir(filepath.Join(w.root, filepath.FromSlash(rel)), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone meanwhile: its removal is listed
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		r := w.rel(p)
		if r != "" && skipDir(r) {
			return filepath.SkipDir
		}
		if r != "" {
			if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil {
				return filepath.SkipDir
			}
		}
		if err := w.fw.Add(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipDir
			}
			return err
		}
		w.mu.Lock()
		w.dirs[r] = true
		w.mu.Unlock()
		return nil
	})
}

func (w *watcher) rel(p string) string {
	if p == w.root {
		return ""
	}
	return filepath.ToSlash(strings.TrimPrefix(p, w.root+string(filepath.Separator)))
}

func (w *watcher) loop() {
	defer close(w.done)
	for {
		select {
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			w.event(ev)
		case err, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			w.fail(err)
		case err := <-w.inject:
			w.fail(err)
		}
	}
}

// fail marks the list untrustworthy until the watcher is replaced.
func (w *watcher) fail(err error) {
	why := "watcher error: " + err.Error()
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		why = "overflow"
	}
	w.mu.Lock()
	w.setWhy(why)
	w.mu.Unlock()
}

func (w *watcher) setWhy(why string) {
	if w.why == "" {
		w.why = why
	}
	clear(w.touched)
}

func (w *watcher) event(ev fsnotify.Event) {
	if strings.HasPrefix(ev.Name, w.cookies+string(filepath.Separator)) {
		w.mu.Lock()
		if ch := w.waiters[ev.Name]; ch != nil {
			close(ch)
			delete(w.waiters, ev.Name)
		}
		w.mu.Unlock()
		return
	}
	if ev.Name == w.cookies {
		w.fail(errors.New("the sync directory was removed"))
		return
	}
	if ev.Name == w.root || !strings.HasPrefix(ev.Name, w.root+string(filepath.Separator)) {
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			w.fail(errors.New("the project directory was moved or removed"))
		}
		return
	}
	rel := w.rel(ev.Name)
	_, base := splitPath(rel)
	if excluded(rel) && !(base == ".git" && rel != ".git") {
		return // a nested .git appearing or going is listed: it needs a walk
	}
	w.mu.Lock()
	if w.why != "" {
		w.mu.Unlock()
		return
	}
	w.touched[rel] = struct{}{}
	if len(w.touched) > w.maxTouched {
		w.setWhy("too many changes (over " + strconv.Itoa(w.maxTouched) + " paths)")
	}
	wasDir := w.dirs[rel]
	if (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)) && wasDir {
		delete(w.dirs, rel)
		if ev.Has(fsnotify.Rename) {
			// fsnotify keeps reporting a moved directory's files under
			// its old name: only a new watcher is sure again.
			w.setWhy("a directory was renamed")
		}
	}
	w.mu.Unlock()
	if ev.Has(fsnotify.Create) && !skipDir(rel) {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			if err := w.addTree(rel); err != nil {
				w.mu.Lock()
				w.setWhy(watchWhy(err))
				w.mu.Unlock()
			}
		}
	}
}

// take returns the paths changed since the last take (every event
// raised before it was called included: it waits for the event of a
// sync file it writes, which the kernel queues after them), or why the
// list cannot be trusted.
func (w *watcher) take(ctx context.Context) (touched []string, why string) {
	w.mu.Lock()
	if w.why != "" {
		defer w.mu.Unlock()
		return nil, w.why
	}
	w.seq++
	name := filepath.Join(w.cookies, w.nonce+strconv.FormatUint(w.seq, 10))
	ch := make(chan struct{})
	w.waiters[name] = ch
	prev := w.cookie
	w.mu.Unlock()
	err := os.ErrNotExist
	if prev != "" {
		err = os.Rename(prev, name)
	}
	if errors.Is(err, fs.ErrNotExist) { // the first take, or the file was removed
		err = os.WriteFile(name, nil, 0o600)
	}
	if err == nil {
		w.mu.Lock()
		w.cookie = name
		w.mu.Unlock()
		t := time.NewTimer(syncTimeout)
		defer t.Stop()
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		case <-t.C:
			err = fmt.Errorf("no event within %v", syncTimeout)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.waiters, name)
	if err != nil {
		w.setWhy("sync: " + err.Error())
	}
	if w.why != "" {
		return nil, w.why
	}
	touched = make([]string, 0, len(w.touched))
	for p := range w.touched {
		touched = append(touched, p)
	}
	clear(w.touched)
	return touched, ""
}
