package release

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"strconv"
	"time"

	helmrelease "helm.sh/helm/v4/pkg/release"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// recordSecretType is the type of the Secrets that hold Helm's release
// records.
const recordSecretType = "helm.sh/release.v1"

// recordSecrets is Helm's Secrets storage driver whose writes encode the
// record themselves, in the same format (the release as JSON, gzipped at
// the best compression, in base64, under the key "release", with Helm's
// labels): Helm's encoding makes a gzip writer per record, about 800 KiB
// allocated and cleared each time, twice per install, where these reuse
// a few.
type recordSecrets struct {
	*driver.Secrets
	impl typedcorev1.SecretInterface
}

// newRecordSecrets returns the driver of the records in impl.
func newRecordSecrets(impl typedcorev1.SecretInterface) *recordSecrets {
	return &recordSecrets{Secrets: driver.NewSecrets(impl), impl: impl}
}

// Create stores rls as a new record under key; ErrReleaseExists when
// there is one.
func (s *recordSecrets) Create(key string, rls helmrelease.Releaser) error {
	obj, err := recordSecret(key, rls, "createdAt")
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if _, err := s.impl.Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return driver.ErrReleaseExists
		}
		return fmt.Errorf("create: failed to create: %w", err)
	}
	return nil
}

// Update stores rls over the record under key.
func (s *recordSecrets) Update(key string, rls helmrelease.Releaser) error {
	obj, err := recordSecret(key, rls, "modifiedAt")
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	if _, err := s.impl.Update(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update: failed to update: %w", err)
	}
	return nil
}

// recordSecret returns the Secret that holds rls under key, labelled with
// the time of the write under stamp (createdAt or modifiedAt), then the
// release's own labels, then its name, owner, status and version.
func recordSecret(key string, rls helmrelease.Releaser, stamp string) (*corev1.Secret, error) {
	var rel *releasev1.Release
	switch r := rls.(type) {
	case *releasev1.Release:
		rel = r
	case releasev1.Release:
		rel = &r
	default:
		return nil, fmt.Errorf("unsupported release type: %T", rls)
	}
	if rel == nil || rel.Info == nil {
		return nil, fmt.Errorf("release %q has no info to store", key)
	}
	encoded, err := encodeRecord(rel)
	if err != nil {
		return nil, fmt.Errorf("failed to encode release %q: %w", rel.Name, err)
	}
	// The release's own labels win over the time stamp: a release read
	// back from its record (the last one, which an upgrade labels its
	// successor with, or one superseded) carries the stamps it was written
	// with, and Helm keeps them.
	labels := make(map[string]string, len(rel.Labels)+5)
	labels[stamp] = strconv.FormatInt(time.Now().Unix(), 10)
	maps.Copy(labels, rel.Labels)
	labels["name"] = rel.Name
	labels["owner"] = "helm"
	labels["status"] = rel.Info.Status.String()
	labels["version"] = strconv.Itoa(rel.Version)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key, Labels: labels},
		Type:       recordSecretType,
		Data:       map[string][]byte{"release": encoded},
	}, nil
}

// keptRecordWriters bounds the gzip writers kept for the next record:
// about 800 KiB each, and records are written a few milliseconds at a time,
// so two serve nearly every write (a sync.Pool would keep one per install
// that wrote at once, and keep them through a garbage collection).
const keptRecordWriters = 2

// recordWriters holds the gzip writers kept for the next record.
var recordWriters = make(chan *gzip.Writer, keptRecordWriters)

// recordWriter returns a kept gzip writer writing to dst, or a new one.
func recordWriter(dst io.Writer) *gzip.Writer {
	select {
	case w := <-recordWriters:
		w.Reset(dst)
		return w
	default:
		w, _ := gzip.NewWriterLevel(dst, gzip.BestCompression) // the level is valid
		return w
	}
}

// keepRecordWriter keeps w for the next record, unless enough are kept.
// A kept writer still refers to the last record's compressed bytes (a few
// KiB) until it is taken again.
func keepRecordWriter(w *gzip.Writer) {
	select {
	case recordWriters <- w:
	default:
	}
}

// encodeRecord returns rel as Helm stores it in a record: its JSON,
// gzipped at the best compression, in standard base64.
func encodeRecord(rel *releasev1.Release) ([]byte, error) {
	raw, err := json.Marshal(rel)
	if err != nil {
		return nil, err
	}
	var zipped bytes.Buffer
	w := recordWriter(&zipped)
	defer keepRecordWriter(w)
	if _, err := w.Write(raw); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	encoded := make([]byte, base64.StdEncoding.EncodedLen(zipped.Len()))
	base64.StdEncoding.Encode(encoded, zipped.Bytes())
	return encoded, nil
}
