package irc

import (
	"sync"
	"time"
)

// DefaultBufferSize is how many messages a Buffer keeps per channel.
const DefaultBufferSize = 200

// Message is one PRIVMSG seen in a channel (or sent to the nick, with
// Channel the sender's nick).
type Message struct {
	Time    time.Time `json:"time"`
	Channel string    `json:"channel"`
	Sender  string    `json:"sender"`
	Text    string    `json:"text"`
	// Mention is set when Text mentions the client's nick (see Mentions).
	Mention bool `json:"mention,omitempty"`
	// Self is set on the client's own messages.
	Self bool `json:"self,omitempty"`
}

// Buffer keeps the last Size messages of each channel. The zero value is
// not usable; see NewBuffer. Safe for concurrent use.
type Buffer struct {
	size int
	mu   sync.Mutex
	by   map[string][]Message // key: folded channel name
}

// NewBuffer returns a buffer keeping size messages per channel (0 =
// DefaultBufferSize).
func NewBuffer(size int) *Buffer {
	if size <= 0 {
		size = DefaultBufferSize
	}
	return &Buffer{size: size, by: map[string][]Message{}}
}

// Add appends m to its channel's messages, dropping the oldest past the
// bound.
func (b *Buffer) Add(m Message) {
	k := foldIRC(m.Channel)
	b.mu.Lock()
	defer b.mu.Unlock()
	l := append(b.by[k], m)
	if len(l) > b.size {
		// copy down so the backing array does not grow forever
		l = append(l[:0:0], l[len(l)-b.size:]...)
	}
	b.by[k] = l
}

// Read returns the last limit messages of channel, oldest first (limit
// <= 0: all that are kept).
func (b *Buffer) Read(channel string, limit int) []Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.by[foldIRC(channel)]
	if limit > 0 && len(l) > limit {
		l = l[len(l)-limit:]
	}
	return append([]Message{}, l...)
}
