package git

import (
	"bytes"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/memory"
)

// limitedStorage is the in-memory storage of a Clone, bounded by its limits.
//
// go-git hands a fetched pack to a storage that implements
// storer.PackfileWriter as a byte stream; limitedStorage buffers it, up to
// the transfer limit, then, before inflating anything, reads the header of
// every object to add up their uncompressed sizes against the object limit,
// and only then loads the objects. Without this, go-git would inflate each
// object into memory as it arrives, and a pack of a few megabytes can hold
// objects of many gigabytes.
type limitedStorage struct {
	*memory.Storage
	limits *cloneLimits
}

// newLimitedStorage returns an empty storage bounded by limits.
func newLimitedStorage(limits *cloneLimits) *limitedStorage {
	return &limitedStorage{Storage: memory.NewStorage(), limits: limits}
}

// PackfileWriter implements storer.PackfileWriter.
func (s *limitedStorage) PackfileWriter() (io.WriteCloser, error) {
	return &packWriter{storage: s}, nil
}

// Module implements storer.ModuleStorer: a submodule's storage shares the
// limits of its parent.
func (s *limitedStorage) Module(name string) (storage.Storer, error) {
	m, err := s.Storage.Module(name)
	if err != nil {
		return nil, err
	}
	mem, ok := m.(*memory.Storage)
	if !ok {
		return nil, fmt.Errorf("submodule %q: unexpected storage %T", name, m)
	}
	return &limitedStorage{Storage: mem, limits: s.limits}, nil
}

// packWriter receives one pack.
type packWriter struct {
	storage *limitedStorage
	buf     bytes.Buffer
	err     error // the pack went over the transfer limit
}

// Write buffers pack data until the Clone has received more pack data than
// its transfer limit; after that it drops the buffer and discards the rest,
// and Close reports the limit. It keeps reading because go-git's file
// transport waits for git-upload-pack to exit when the pack is closed, and
// that process never exits while its output is not read. Over the network
// transports the connections, which carry the pack and more, reach the
// limit first and stop the transfer.
func (w *packWriter) Write(p []byte) (int, error) {
	if w.err == nil {
		w.err = w.storage.limits.packs.take(int64(len(p)))
	}
	if w.err == nil {
		w.err = w.storage.limits.hold(int64(len(p)))
	}
	if w.err != nil {
		w.buf = bytes.Buffer{}
		return len(p), nil
	}
	return w.buf.Write(p)
}

// Close loads the objects of a complete pack into the storage, if their
// uncompressed size fits the object limit, and drops the buffer.
func (w *packWriter) Close() error {
	pack := w.buf.Bytes()
	limits := w.storage.limits
	defer func() {
		// The buffer goes; the objects loaded from it stay held.
		limits.unhold(int64(len(pack)))
		w.buf = bytes.Buffer{}
	}()
	if w.err != nil || len(pack) == 0 {
		return w.err
	}
	if err := chargeObjects(pack, limits); err != nil {
		return err
	}
	return packfile.UpdateObjectStorage(w.storage.Storage, bytes.NewReader(pack))
}

// chargeObjects counts against the object limit, and holds of the memory
// budget, the uncompressed size of every object in pack, reading only
// object headers and delta headers, and stops before inflating an object
// that would exceed either. A delta is charged both its own size and the
// size of the object it produces (an upper bound of what loading it keeps
// in memory).
func chargeObjects(pack []byte, limits *cloneLimits) error {
	return scanObjectSizes(pack, func(n int64) error {
		if err := limits.objects.take(n); err != nil {
			return err
		}
		return limits.hold(n)
	})
}

// scanObjectSizes calls charge with the uncompressed size of every object
// of pack (and of every delta's result), stopping at its first error.
func scanObjectSizes(pack []byte, charge func(int64) error) error {
	sc := packfile.NewScanner(bytes.NewReader(pack))
	_, count, err := sc.Header()
	if err != nil {
		return err
	}
	for range count {
		oh, err := sc.NextObjectHeader()
		if err != nil {
			return err
		}
		if err := charge(oh.Length); err != nil {
			return err
		}
		if !oh.Type.IsDelta() {
			continue
		}
		if err := chargeDelta(sc, charge); err != nil {
			return err
		}
	}
	return nil
}

// chargeDelta reads the delta object the scanner is at and charges the
// size of the object it produces.
func chargeDelta(sc *packfile.Scanner, charge func(int64) error) error {
	var head deltaHead
	if _, _, err := sc.NextObject(&head); err != nil {
		return err
	}
	size, err := head.targetSize()
	if err != nil {
		return err
	}
	return charge(size)
}

// deltaHead keeps the first bytes of a delta, which hold the sizes of its
// base and of its result, and discards the rest.
type deltaHead struct {
	b []byte
}

// maxDeltaHead is the length of two 64-bit LEB128 numbers.
const maxDeltaHead = 20

// Write implements io.Writer.
func (h *deltaHead) Write(p []byte) (int, error) {
	if room := maxDeltaHead - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// targetSize decodes the size of the object the delta produces: the second
// of the two LEB128 numbers that open a delta.
func (h *deltaHead) targetSize() (int64, error) {
	rest := h.b
	var size uint64
	for range 2 {
		var ok bool
		if size, rest, ok = leb128(rest); !ok {
			return 0, fmt.Errorf("%w: bad delta header", packfile.ErrMalformedPackFile)
		}
	}
	if size > 1<<62 {
		return 1 << 62, nil // more than any limit
	}
	return int64(size), nil
}

// leb128 decodes one little-endian base-128 number from b.
func leb128(b []byte) (uint64, []byte, bool) {
	var n uint64
	for i := 0; i < len(b) && i < 10; i++ {
		n |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return n, b[i+1:], true
		}
	}
	return 0, nil, false
}
