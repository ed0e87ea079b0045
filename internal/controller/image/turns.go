package image

import (
	"context"
	"sync"
)

// turns lets one holder at a time work on each key, and the others wait
// their turn or give up when their context is done. The zero value is
// ready to use; a key's entry is dropped when no one holds or waits for
// it, so memory follows the keys in use, not every key ever seen.
type turns struct {
	mu   sync.Mutex
	keys map[string]*turn
}

// turn is the token of one key and how many hold or wait for it.
type turn struct {
	token chan struct{}
	users int
}

// lock waits for key's turn and returns the function that ends it, or
// ctx's error when ctx is done first.
func (t *turns) lock(ctx context.Context, key string) (unlock func(), err error) {
	t.mu.Lock()
	if t.keys == nil {
		t.keys = map[string]*turn{}
	}
	k, ok := t.keys[key]
	if !ok {
		k = &turn{token: make(chan struct{}, 1)}
		t.keys[key] = k
	}
	k.users++
	t.mu.Unlock()
	select {
	case k.token <- struct{}{}:
		return func() { <-k.token; t.release(key, k) }, nil
	case <-ctx.Done():
		t.release(key, k)
		return nil, ctx.Err()
	}
}

// release counts one user of k out, and drops k when it was the last.
func (t *turns) release(key string, k *turn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k.users--
	if k.users == 0 {
		delete(t.keys, key)
	}
}
