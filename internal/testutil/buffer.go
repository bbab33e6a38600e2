package testutil

import (
	"bytes"
	"sync"
)

// Buffer is a byte buffer that goroutines may write while another reads it: tests collect the
// logs and output of the servers they run in one. The zero Buffer is empty and ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
