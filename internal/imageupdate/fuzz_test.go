package imageupdate

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzApplySetters checks, for any file content, that ApplySetters does not
// panic, writes nothing when it fails, changes only the values before a
// marker comment (one line a change, line breaks kept), and changes nothing
// on a second run.
func FuzzApplySetters(f *testing.F) {
	for _, seed := range []string{
		"image: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"apps:podinfo\"}\n",
		"- 1.0.0 # {\"$imagepolicy\": \"apps:podinfo:tag\"}\r\n- x\r\n",
		"a: \"x\" # {\"$imagepolicy\": \"apps:pinned:digest\"}\nb: 'y' #{\"$imagepolicy\":\"apps:pinned:name\"}\n",
		"---\nkind: A\nmetadata: {name: a}\nv: &a !!str 1 # {\"$imagepolicy\": \"apps:pinned\"}\n---\nw: *a # {\"$imagepolicy\": \"apps:podinfo\"}\n",
		"a: | # {\"$imagepolicy\": \"apps:podinfo\"}\n  x\n",
		"- # {\"$imagepolicy\": \"apps:podinfo\"}\n",
		"a: [x, # {\"$imagepolicy\": \"apps:podinfo\"}\n  y]\n",
		"\ufeffa: x\rb: y # {\"$imagepolicy\": \"apps:podinfo:tag\"}\u2028c: 1\n",
		"a: foo\n  bar # {\"$imagepolicy\": \"apps:podinfo\"}\n",
		"a: x # {\"$imagepolicy\": \"apps:podinfo\"} extra\n",
		"# {\"$imagepolicy\": \"apps:podinfo\"}\na: 1 # {\"$imagepolicy\": \"apps:podinfo\"}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		root := t.TempDir()
		file := filepath.Join(root, "f.yaml")
		if err := os.WriteFile(file, content, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := ApplySetters(root, ".", testRefs)
		got, readErr := os.ReadFile(file)
		if readErr != nil {
			t.Fatal(readErr)
		}
		if err != nil {
			var malformed *MalformedMarkersError
			if !errors.As(err, &malformed) {
				t.Fatalf("unexpected error: %v", err)
			}
			if !bytes.Equal(got, content) {
				t.Fatalf("file written although the run failed")
			}
			return
		}
		checkOnlyMarkedValuesChanged(t, content, got, len(res.Changes()))

		again, err := ApplySetters(root, ".", testRefs)
		if err != nil || !again.Empty() {
			t.Fatalf("second run: err %v, changes %v", err, again.Changes())
		}
	})
}

// checkOnlyMarkedValuesChanged compares old and new content line by line (on
// "\n", independent of the package's own line splitting): the same lines,
// and on each changed line, what follows the change holds the marker.
func checkOnlyMarkedValuesChanged(t *testing.T, old, updated []byte, changes int) {
	t.Helper()
	oldLines := bytes.Split(old, []byte("\n"))
	newLines := bytes.Split(updated, []byte("\n"))
	if len(oldLines) != len(newLines) {
		t.Fatalf("line count changed: %d -> %d", len(oldLines), len(newLines))
	}
	changedLines := 0
	for i := range oldLines {
		o, n := oldLines[i], newLines[i]
		if bytes.Equal(o, n) {
			continue
		}
		changedLines++
		suffix := commonSuffix(o, n)
		if !bytes.Contains(suffix, []byte(markerKey)) {
			t.Fatalf("line %d changed outside a marked value:\n%q\n%q", i+1, o, n)
		}
	}
	if changedLines > changes {
		t.Fatalf("%d lines changed for %d changes", changedLines, changes)
	}
}

func commonSuffix(a, b []byte) []byte {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return a[len(a)-n:]
}
