package gitserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/revlist"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
)

// StartNativeHTTP serves the repositories read-only over smart HTTP
// (protocol version 0, stateless RPC) on a free loopback port, with the
// upload-pack side of the protocol answered in process from the bare
// repositories by go-git, and returns the base URL. It supports clones and
// fetches, shallow ones (deepen by commits) included, and no pushes or
// credentials.
//
// It exists for measurements: git-http-backend runs two or three git
// processes per request, whose start-up costs a small machine more CPU than
// the client it serves. The repositories are the same bare repositories,
// written by Repo, so the two servers answer the same history.
func (s *Server) StartNativeHTTP() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("gitserver: listen: %w", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(s.handleNative), ErrorLog: s.newErrorLog()}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-s.ctx.Done()
		_ = srv.Close()
	}()
	return "http://" + ln.Addr().String(), nil
}

// handleNative answers GET <repo>/info/refs?service=git-upload-pack and
// POST <repo>/git-upload-pack.
func (s *Server) handleNative(w http.ResponseWriter, r *http.Request) {
	s.countHTTP(r.URL.Path)
	if s.down.Load() {
		http.Error(w, "gitserver: host is down", http.StatusServiceUnavailable)
		return
	}
	path := r.URL.Path
	var err error
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/info/refs") && r.URL.Query().Get("service") == "git-upload-pack":
		err = s.advertise(w, strings.TrimSuffix(path, "/info/refs"))
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/git-upload-pack"):
		err = s.uploadPack(w, r, strings.TrimSuffix(path, "/git-upload-pack"))
	default:
		http.Error(w, "gitserver: only upload-pack is served", http.StatusForbidden)
		return
	}
	var notFound *repoNotFoundError
	switch {
	case errors.As(err, &notFound):
		http.Error(w, err.Error(), http.StatusNotFound)
	case err != nil:
		fmt.Fprintf(s.logWriter(), "gitserver: %s %s: %v\n", r.Method, path, err)
	}
}

type repoNotFoundError struct{ name string }

func (e *repoNotFoundError) Error() string { return "gitserver: no repository " + e.name }

// openStorer opens the bare repository served at urlPath.
func (s *Server) openStorer(urlPath string) (storage.Storer, error) {
	name := strings.Trim(urlPath, "/")
	dir := filepath.Join(s.root, filepath.FromSlash(name))
	if rel, err := filepath.Rel(s.root, dir); err != nil || strings.HasPrefix(rel, "..") || name == "" {
		return nil, &repoNotFoundError{name: name}
	}
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return nil, &repoNotFoundError{name: name}
	}
	return repo.Storer, nil
}

// nativeCapabilities are what the server offers: packs with offset deltas,
// shallow clones, no progress messages, and HEAD's target.
func nativeCapabilities(st storage.Storer) (*capability.List, error) {
	caps := capability.NewList()
	for _, c := range []capability.Capability{capability.OFSDelta, capability.Shallow, capability.NoProgress} {
		if err := caps.Set(c); err != nil {
			return nil, err
		}
	}
	if err := caps.Set(capability.Agent, "windlass-gitserver"); err != nil {
		return nil, err
	}
	if head, err := st.Reference(plumbing.HEAD); err == nil && head.Type() == plumbing.SymbolicReference {
		if err := caps.Set(capability.SymRef, "HEAD:"+head.Target().String()); err != nil {
			return nil, err
		}
	}
	return caps, nil
}

// advertise writes the reference advertisement of the repository.
func (s *Server) advertise(w http.ResponseWriter, urlPath string) error {
	st, err := s.openStorer(urlPath)
	if err != nil {
		return err
	}
	ar := packp.NewAdvRefs()
	if ar.Capabilities, err = nativeCapabilities(st); err != nil {
		return err
	}
	refs, err := st.IterReferences()
	if err != nil {
		return err
	}
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference && ref.Name() != plumbing.HEAD {
			ar.References[ref.Name().String()] = ref.Hash()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if head, err := storer.ResolveReference(st, plumbing.HEAD); err == nil {
		h := head.Hash()
		ar.Head = &h
	}
	ar.Prefix = [][]byte{[]byte("# service=git-upload-pack"), pktline.Flush}
	var buf bytes.Buffer
	if err := ar.Encode(&buf); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
	w.Header().Set("Cache-Control", "no-cache")
	_, err = w.Write(buf.Bytes())
	return err
}

// uploadPack answers one stateless upload-pack request: the shallow
// boundary when the client asked for a depth and, once the client says
// "done", a NAK (haves are not negotiated: every object the wants reach
// within the depth is sent) and the pack.
func (s *Server) uploadPack(w http.ResponseWriter, r *http.Request, urlPath string) error {
	st, err := s.openStorer(urlPath)
	if err != nil {
		return err
	}
	body := bufio.NewReader(r.Body)
	req := packp.NewUploadRequest()
	if err := req.Decode(body); err != nil {
		http.Error(w, "gitserver: "+err.Error(), http.StatusBadRequest)
		return nil
	}
	done, err := readDone(body)
	if err != nil {
		http.Error(w, "gitserver: "+err.Error(), http.StatusBadRequest)
		return nil
	}
	depth := 0
	if d, ok := req.Depth.(packp.DepthCommits); ok {
		depth = int(d)
	} else if !req.Depth.IsZero() {
		http.Error(w, "gitserver: only a depth in commits is supported", http.StatusBadRequest)
		return nil
	}
	objs, shallows, err := objectsToSend(st, req.Wants, depth)
	if err != nil {
		http.Error(w, "gitserver: "+err.Error(), http.StatusBadRequest)
		return nil
	}
	w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
	w.Header().Set("Cache-Control", "no-cache")
	if depth > 0 {
		if err := (&packp.ShallowUpdate{Shallows: shallows}).Encode(w); err != nil {
			return err
		}
	}
	if !done {
		return nil
	}
	if err := (&packp.ServerResponse{}).Encode(w, false); err != nil {
		return err
	}
	_, err = packfile.NewEncoder(w, st, false).Encode(objs, 10)
	return err
}

// readDone reads the haves that follow the wants and reports whether the
// client ended with "done": without it, the client is still negotiating
// (git's first round of a shallow fetch) and gets no pack yet.
func readDone(body *bufio.Reader) (bool, error) {
	sc := pktline.NewScanner(body)
	for sc.Scan() {
		if bytes.Equal(bytes.TrimSpace(sc.Bytes()), []byte("done")) {
			return true, nil
		}
	}
	return false, sc.Err()
}

// objectsToSend returns the objects that the wants reach, within depth
// commits when depth > 0, and the commits at that boundary (the client's
// new shallow commits; as git's upload-pack does, a root commit there is
// listed too).
func objectsToSend(st storage.Storer, wants []plumbing.Hash, depth int) ([]plumbing.Hash, []plumbing.Hash, error) {
	if depth <= 0 {
		objs, err := revlist.Objects(st, wants, nil)
		return objs, nil, err
	}
	seen := map[plumbing.Hash]bool{}
	var objs, shallows []plumbing.Hash
	level := wants
	for d := 1; d <= depth && len(level) > 0; d++ {
		var next []plumbing.Hash
		for _, h := range level {
			if seen[h] {
				continue
			}
			seen[h] = true
			c, err := object.GetCommit(st, h)
			if err != nil {
				return nil, nil, fmt.Errorf("want %s: %w", h, err)
			}
			objs = append(objs, h)
			tree, err := revlist.Objects(st, []plumbing.Hash{c.TreeHash}, nil)
			if err != nil {
				return nil, nil, err
			}
			objs = append(objs, tree...)
			if d == depth {
				shallows = append(shallows, h)
			}
			next = append(next, c.ParentHashes...)
		}
		level = next
	}
	return dedupe(objs), shallows, nil
}

// dedupe drops repeated hashes, keeping the first of each.
func dedupe(hashes []plumbing.Hash) []plumbing.Hash {
	seen := make(map[plumbing.Hash]bool, len(hashes))
	out := hashes[:0]
	for _, h := range hashes {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}
