package bucket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/minio/minio-go/v7"

	"github.com/windlass-dev/windlass/internal/parallel"
)

// defaultConcurrency is how many objects download at once when
// DownloadOptions.Concurrency is not set.
const defaultConcurrency = 4

// DownloadOptions bounds a download.
type DownloadOptions struct {
	// Concurrency is how many objects download at once; 0 or less means 4.
	Concurrency int
	// MaxObjectSize refuses an object listed larger than this many bytes;
	// 0 or less means no limit. Every object is read only up to its listed
	// size, so no object goes past the limit either.
	MaxObjectSize int64
	// MaxTotalSize refuses a download whose objects add up to more than
	// this many bytes; 0 or less means no limit.
	MaxTotalSize int64
}

// Download writes each object of bucket to dir/<key>, files 0644 and
// folders 0755 (before the umask), a bounded number at once. It refuses the
// whole download up front when a key is unsafe (see CheckKey), listed twice
// or a folder of another, or when a size limit is exceeded. Each object is
// read only up to its listed size: one that turns out shorter or longer is
// an error. The first error stops the other downloads and is returned; the
// file of an object that failed is removed. dir is created if missing, and
// a file already there is an error.
func (c *Client) Download(ctx context.Context, bucket string, objs []Object, dir string, o DownloadOptions) error {
	if dir == "" {
		return errors.New("the download folder is empty")
	}
	if err := checkObjects(objs); err != nil {
		return fmt.Errorf("bucket '%s' %w", bucket, err)
	}
	if err := checkLimits(bucket, objs, o); err != nil {
		return err
	}
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating the download folder: %w", err)
	}
	limit := o.Concurrency
	if limit <= 0 {
		limit = defaultConcurrency
	}
	return c.downloadAll(ctx, bucket, objs, dir, limit)
}

// checkLimits refuses objects listed larger than o.MaxObjectSize and
// listings that add up to more than o.MaxTotalSize.
func checkLimits(bucket string, objs []Object, o DownloadOptions) error {
	var total int64
	for _, obj := range objs {
		if o.MaxObjectSize > 0 && obj.Size > o.MaxObjectSize {
			return fmt.Errorf("object '%s' of bucket '%s' is %d bytes, more than the limit of %d bytes",
				obj.Key, bucket, obj.Size, o.MaxObjectSize)
		}
		if o.MaxTotalSize > 0 {
			if obj.Size > o.MaxTotalSize-total {
				return fmt.Errorf("the objects of bucket '%s' add up to more than the limit of %d bytes: narrow the prefix or ignore some objects",
					bucket, o.MaxTotalSize)
			}
			total += obj.Size
		}
	}
	return nil
}

// downloadAll downloads objs into dir, limit at once, and returns the first
// error, after which the downloads not yet done are stopped.
func (c *Client) downloadAll(parent context.Context, bucket string, objs []Object, dir string, limit int) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var mu sync.Mutex
	var first error
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}
	panics := parallel.Do(ctx, len(objs), limit, func(i int) {
		if ctx.Err() != nil {
			return
		}
		if err := c.download(ctx, bucket, objs[i], dir); err != nil {
			fail(err)
		}
	})
	for _, p := range panics {
		fail(fmt.Errorf("downloading object '%s' from bucket '%s': %w", objs[p.Index].Key, bucket, p))
	}
	if first == nil && parent.Err() != nil {
		return fmt.Errorf("downloading from bucket '%s' stopped: %w", bucket, parent.Err())
	}
	return first
}

// download writes one object to its file under dir.
func (c *Client) download(ctx context.Context, bucket string, obj Object, dir string) error {
	action := fmt.Sprintf("downloading object '%s' from bucket '%s'", obj.Key, bucket)
	path, err := localPath(dir, obj.Key)
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("%s: %s", action, c.clean(err.Error()))
	}
	body, _, _, err := c.core.GetObject(ctx, bucket, obj.Key, minio.GetObjectOptions{})
	if err != nil {
		return c.explain(ctx, err, bucket, obj.Key, action)
	}
	defer body.Close()
	if err := writeFile(path, body, obj.Size); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("%s stopped: %w", action, ctxErr)
		}
		return fmt.Errorf("%s: %s", action, c.clean(err.Error()))
	}
	return nil
}

// localPath returns dir/<key> as a file path, the second guard after
// CheckKey: the path must be the one securejoin finds inside dir, so no
// symbolic link or ".." takes it elsewhere.
func localPath(dir, key string) (string, error) {
	want := filepath.Join(dir, filepath.FromSlash(key))
	got, err := securejoin.SecureJoin(dir, filepath.FromSlash(key))
	if err != nil {
		return "", fmt.Errorf("resolving its path in the download folder: %w", err)
	}
	if got != want {
		return "", errors.New("its path leaves the download folder or goes through a symbolic link")
	}
	return want, nil
}

// writeFile creates path, which must not exist, with what body holds, which
// must be exactly size bytes; on error the file is removed.
func writeFile(path string, body io.Reader, size int64) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if closeErr := f.Close(); err == nil {
			err = closeErr
		}
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	return copyExactly(f, body, size)
}

// copyExactly copies size bytes from src to dst and checks that src ends
// there, reading at most one byte past it.
func copyExactly(dst io.Writer, src io.Reader, size int64) error {
	n, err := io.CopyN(dst, src, size)
	switch {
	case errors.Is(err, io.EOF):
		return fmt.Errorf("the object ended after %d of its listed %d bytes: it changed since the listing, retry", n, size)
	case err != nil:
		return err
	}
	var probe [1]byte
	m, err := io.ReadFull(src, probe[:])
	if m > 0 {
		return fmt.Errorf("the object is larger than its listed %d bytes (it changed since the listing, or the server misbehaves): stopped reading it", size)
	}
	if !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}
