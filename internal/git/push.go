package git

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/revlist"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"

	"github.com/windlass-dev/windlass/internal/parallel"
)

// A push is made here from go-git's transport sessions rather than with
// go-git's Remote.Push, for three reasons: the fast-forward check must work
// in a shallow workspace (go-git's walks the history down to objects a
// shallow fetch never received, and fails), a refusal must be told apart
// from a non-fast-forward from the report the server sends (go-git keeps
// only an error string), and push options must not be dropped silently by
// a server that does not take them (go-git sends them only when the server
// advertises push-options, and says nothing otherwise).

// PushOptions say where Workspace.Push pushes Head. A push never forces:
// every reference it updates moves forward from where the remote has it,
// or is created.
type PushOptions struct {
	// Branch is the branch to push to, created from Head when the remote
	// does not have it. When both Branch and RefSpec are empty, it is the
	// branch Open checked out; when RefSpec is set and Branch is empty,
	// only the RefSpec is pushed.
	Branch string
	// RefSpec is an optional refspec as git writes it, "src:dst", such as
	// "refs/heads/auto:refs/for/main" for Gerrit. The source is Head,
	// named "HEAD", as the branch of Branch or of the checkout (short or
	// full name), or as the full hash of a commit of the workspace. A
	// destination that does not start with refs/ is a branch. Forced
	// ("+"), deleting (":dst") and pattern ("*") refspecs are refused.
	RefSpec string
	// Options are the push options ("git push -o key=value"), such as
	// GitLab's merge_request.create; a value "" is sent as "key=". The
	// push fails when the server does not accept push options.
	Options map[string]string
	// Notes pushes refs/notes/commits too (see AddNote), in the same
	// atomic push when the server supports it, after the other references
	// otherwise, so that a note never reaches the remote without its
	// commit.
	Notes bool
}

// PushRejectedError reports a reference the push did not update.
type PushRejectedError struct {
	// Ref is the full name of the remote reference.
	Ref string
	// Reason is the status git reports for it, such as "non-fast-forward"
	// or "pre-receive hook declined".
	Reason string
	// NonFastForward is true when the remote has commits the workspace
	// does not: Refresh, apply the edits again, commit and push. Otherwise
	// the server refused the update (a hook, a protected branch...), which
	// a retry of the same push does not mend.
	NonFastForward bool
	// RemoteMessage is what the server printed during the push (the
	// "remote:" lines of git), such as the message of the hook that
	// refused it; at most a few kilobytes, without credentials.
	RemoteMessage string
}

// Error implements error.
func (e *PushRejectedError) Error() string {
	msg := fmt.Sprintf("push to %s rejected: %s", e.Ref, e.Reason)
	if e.RemoteMessage != "" {
		msg += " (remote: " + strings.ReplaceAll(e.RemoteMessage, "\n", "; ") + ")"
	}
	return msg
}

// refUpdate is one reference a push sets.
type refUpdate struct {
	name plumbing.ReferenceName
	hash plumbing.Hash
}

// Push pushes Head (and, with opts.Notes, the notes) as opts says. It
// returns nil when the remote is updated or already there, a
// [*PushRejectedError] when a reference is not updated, and an
// [*InvalidOptionsError] for options that can never work. Errors never
// contain credentials. ctx bounds the push as it bounds Open.
func (w *Workspace) Push(ctx context.Context, opts PushOptions) error {
	for k, v := range opts.Options {
		if k == "" || strings.ContainsAny(k+v, "\n\x00") {
			return &InvalidOptionsError{Reason: fmt.Sprintf("push option %q: empty, or holds a newline or NUL", k)}
		}
	}
	updates, err := w.pushUpdates(opts)
	if err != nil {
		return err
	}
	return w.run(ctx, "pushing to", func(r *remote) error {
		later, err := w.pushOnce(ctx, r, updates, opts.Options)
		if err == nil && len(later) > 0 {
			_, err = w.pushOnce(ctx, r, later, nil)
		}
		if err != nil {
			return fmt.Errorf("pushing to '%s': %w", SanitizeURL(r.url), err)
		}
		return nil
	})
}

// pushUpdates lists the references opts asks to set.
func (w *Workspace) pushUpdates(opts PushOptions) ([]refUpdate, error) {
	head, err := w.head()
	if err != nil {
		return nil, err
	}
	var updates []refUpdate
	if opts.Branch != "" || opts.RefSpec == "" {
		branch := opts.Branch
		if branch == "" {
			branch = w.branch()
		}
		if branch == "" {
			return nil, &InvalidOptionsError{Reason: "push: the checkout is not a branch; name a branch or a refspec to push to"}
		}
		name := plumbing.NewBranchReferenceName(branch)
		if err := name.Validate(); err != nil {
			return nil, &InvalidOptionsError{Reason: fmt.Sprintf("push: invalid branch %q", branch)}
		}
		updates = append(updates, refUpdate{name: name, hash: head})
	}
	if opts.RefSpec != "" {
		u, err := w.parseRefSpec(opts.RefSpec, opts.Branch, head)
		if err != nil {
			return nil, err
		}
		updates = append(updates, u)
	}
	if opts.Notes {
		ref, err := w.repo.Reference(notesRef, false)
		if err != nil && !errors.Is(err, plumbing.ErrReferenceNotFound) {
			return nil, err
		}
		if err == nil {
			updates = append(updates, refUpdate{name: notesRef, hash: ref.Hash()})
		}
	}
	return updates, nil
}

// parseRefSpec resolves a "src:dst" refspec to the update it makes.
func (w *Workspace) parseRefSpec(spec, pushBranch string, head plumbing.Hash) (refUpdate, error) {
	invalid := func(why string) (refUpdate, error) {
		return refUpdate{}, &InvalidOptionsError{Reason: fmt.Sprintf("push refspec %q: %s", spec, why)}
	}
	src, dst, ok := strings.Cut(spec, ":")
	switch {
	case strings.HasPrefix(spec, "+"):
		return invalid("forced pushes are not allowed")
	case !ok || strings.Contains(dst, ":"):
		return invalid(`not of the form "src:dst"`)
	case src == "" || dst == "":
		return invalid("deleting a reference is not allowed")
	case strings.Contains(spec, "*"):
		return invalid("patterns are not allowed")
	}
	if !strings.HasPrefix(dst, "refs/") {
		dst = plumbing.NewBranchReferenceName(dst).String()
	}
	name := plumbing.ReferenceName(dst)
	if err := name.Validate(); err != nil {
		return invalid("invalid destination")
	}
	short := strings.TrimPrefix(src, "refs/heads/")
	switch {
	case src == "HEAD" || src == "@" || (short != "" && (short == pushBranch || short == w.branch())):
		return refUpdate{name: name, hash: head}, nil
	case isFullHash(src):
		hash := plumbing.NewHash(strings.ToLower(src))
		if _, err := w.repo.CommitObject(hash); err != nil {
			return invalid("the source commit is not in the workspace")
		}
		return refUpdate{name: name, hash: hash}, nil
	}
	return invalid("the source is neither HEAD, the workspace's branch nor a commit of the workspace")
}

// pushOnce pushes updates over one connection. When the server cannot
// update several references atomically, it pushes the other references
// and returns the notes, to be pushed next.
func (w *Workspace) pushOnce(ctx context.Context, r *remote, updates []refUpdate, options map[string]string) (
	later []refUpdate, err error) {
	sess, err := newReceivePackSession(r)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := sess.Close(); err == nil && cerr != nil && !errors.Is(cerr, io.EOF) {
			err = cerr
		}
	}()
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return nil, err
	}
	if len(options) > 0 && !adv.Capabilities.Supports(capability.PushOptions) {
		return nil, errors.New("the remote does not accept push options")
	}
	atomic := adv.Capabilities.Supports(capability.Atomic)
	if !atomic && len(updates) > 1 {
		updates, later = splitNotes(updates)
	}
	remoteRefs, err := adv.AllReferences()
	if err != nil {
		return nil, err
	}
	cmds, err := w.commands(updates, remoteRefs)
	if err != nil || len(cmds) == 0 {
		return later, err
	}
	req, messages := newUpdateRequest(adv.Capabilities, cmds, options, atomic)
	if err := w.send(ctx, sess, req, adv, remoteRefs, messages); err != nil {
		return nil, err
	}
	return later, nil
}

// newReceivePackSession opens a push session to r, with its transport
// settings (which route it through the operation).
func newReceivePackSession(r *remote) (transport.ReceivePackSession, error) {
	ep, err := transport.NewEndpoint(r.url)
	if err != nil {
		return nil, err
	}
	ep.CaBundle, ep.ClientCert, ep.ClientKey = r.ca, r.cert, r.key
	ep.Proxy = r.proxy
	t, err := client.NewClient(ep)
	if err != nil {
		return nil, err
	}
	return t.NewReceivePackSession(ep, r.auth)
}

// splitNotes separates the notes from the other updates.
func splitNotes(updates []refUpdate) (others, notes []refUpdate) {
	for _, u := range updates {
		if u.name == notesRef {
			notes = append(notes, u)
		} else {
			others = append(others, u)
		}
	}
	if len(others) == 0 {
		return notes, nil
	}
	return others, notes
}

// commands turns updates into push commands against the remote's
// references, leaving out those already there. An update that is not a
// fast-forward is a [*PushRejectedError], before anything is sent.
func (w *Workspace) commands(updates []refUpdate, remoteRefs storer.ReferenceStorer) ([]*packp.Command, error) {
	var cmds []*packp.Command
	for _, u := range updates {
		old := plumbing.ZeroHash
		ref, err := remoteRefs.Reference(u.name)
		switch {
		case err == nil:
			old = ref.Hash()
		case !errors.Is(err, plumbing.ErrReferenceNotFound):
			return nil, err
		}
		if old == u.hash {
			continue
		}
		if !old.IsZero() {
			ff, err := descends(w.repo.Storer, u.hash, old)
			if err != nil {
				return nil, err
			}
			if !ff {
				return nil, &PushRejectedError{Ref: u.name.String(), Reason: "non-fast-forward", NonFastForward: true}
			}
		}
		cmds = append(cmds, &packp.Command{Name: u.name, Old: old, New: u.hash})
	}
	return cmds, nil
}

// descends reports whether ancestor is tip or one of its ancestors. A
// commit missing from the store (the edge of a shallow history, or a
// remote commit never fetched) ends that line of the search: what cannot
// be proved a fast-forward is not one.
func descends(s storer.EncodedObjectStorer, tip, ancestor plumbing.Hash) (bool, error) {
	if _, err := s.EncodedObject(plumbing.CommitObject, ancestor); err != nil {
		return false, nil
	}
	seen := map[plumbing.Hash]bool{tip: true}
	queue := []plumbing.Hash{tip}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if h == ancestor {
			return true, nil
		}
		c, err := object.GetCommit(s, h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			continue
		}
		if err != nil {
			return false, err
		}
		for _, p := range c.ParentHashes {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return false, nil
}

// newUpdateRequest builds the request for cmds: report-status, the
// server's messages on a side band (quiet, so that they are its hooks'
// messages and not progress meters), push options in key order, atomic
// when there are several commands and the server supports it.
func newUpdateRequest(caps *capability.List, cmds []*packp.Command, options map[string]string, atomic bool) (
	*packp.ReferenceUpdateRequest, *remoteMessages) {
	req := packp.NewReferenceUpdateRequestFromCapabilities(caps)
	req.Commands = cmds
	messages := &remoteMessages{}
	for _, c := range []capability.Capability{capability.Sideband64k, capability.Sideband} {
		if caps.Supports(c) {
			_ = req.Capabilities.Set(c)
			req.Progress = messages
			break
		}
	}
	if caps.Supports(capability.Quiet) {
		_ = req.Capabilities.Set(capability.Quiet)
	}
	if atomic && len(cmds) > 1 {
		_ = req.Capabilities.Set(capability.Atomic)
	}
	if len(options) > 0 {
		_ = req.Capabilities.Set(capability.PushOptions)
		keys := make([]string, 0, len(options))
		for k := range options {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			req.Options = append(req.Options, &packp.Option{Key: k, Value: options[k]})
		}
	}
	return req, messages
}

// send sends req with the pack of the objects the remote lacks and reads
// the server's report.
func (w *Workspace) send(ctx context.Context, sess transport.ReceivePackSession, req *packp.ReferenceUpdateRequest,
	adv *packp.AdvRefs, remoteRefs storer.ReferenceStorer, messages *remoteMessages) error {
	hashes, err := w.objectsToPush(req.Commands, remoteRefs)
	if err != nil {
		return err
	}
	cfg, err := w.repo.Storer.Config()
	if err != nil {
		return err
	}
	packR, packW := io.Pipe()
	req.Packfile = packR
	encoded := make(chan error, 1)
	go func() {
		// A panic here would end the process: it fails this push instead.
		var err error
		if p := parallel.Call(ctx, func() {
			err = encodePack(packW, w.repo.Storer, hashes, !adv.Capabilities.Supports(capability.OFSDelta), cfg.Pack.Window)
		}); p != nil {
			err = fmt.Errorf("encoding the pack: %w", p)
		}
		encoded <- err
		_ = packW.CloseWithError(err)
	}()
	report, err := sess.ReceivePack(ctx, req)
	_ = packR.Close() // unblocks the encoder when the pack was not read to the end
	encodeErr := <-encoded
	var panicked *parallel.PanicError
	if errors.As(encodeErr, &panicked) {
		return encodeErr // the cause of whatever the server made of the cut pack
	}
	if report != nil {
		if rejected := w.rejection(report, messages.String()); rejected != nil {
			return rejected
		}
	}
	if err != nil {
		return err
	}
	return encodeErr
}

// encodePack writes the pack of hashes to out; a variable, so that a test
// can make it panic.
var encodePack = func(out io.Writer, s storer.EncodedObjectStorer, hashes []plumbing.Hash, refDeltas bool, window uint) error {
	_, err := packfile.NewEncoder(out, s, refDeltas).Encode(hashes, window)
	return err
}

// objectsToPush lists the objects reachable from the commands' new values
// that are not reachable from the remote's references (as far as the
// workspace knows them) nor from the edge of a shallow history.
func (w *Workspace) objectsToPush(cmds []*packp.Command, remoteRefs storer.ReferenceStorer) ([]plumbing.Hash, error) {
	var wants, haves []plumbing.Hash
	for _, c := range cmds {
		wants = append(wants, c.New)
	}
	iter, err := remoteRefs.IterReferences()
	if err != nil {
		return nil, err
	}
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			haves = append(haves, ref.Hash())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	shallow, err := w.repo.Storer.Shallow()
	if err != nil {
		return nil, err
	}
	return revlist.Objects(w.repo.Storer, wants, append(haves, shallow...))
}

// rejection returns the first reference the report says was not updated,
// or nil when all were. In an atomic push that one reference failed, the
// others report "atomic push failed"; the reference that failed is the one
// returned.
func (w *Workspace) rejection(report *packp.ReportStatus, messages string) error {
	if report.UnpackStatus != "" && report.UnpackStatus != "ok" {
		return fmt.Errorf("the remote could not store the pushed objects: %s", report.UnpackStatus)
	}
	var first *packp.CommandStatus
	for _, s := range report.CommandStatuses {
		if s.Status == "ok" {
			continue
		}
		if first == nil || (isAtomicFailure(first.Status) && !isAtomicFailure(s.Status)) {
			first = s
		}
	}
	if first == nil {
		return nil
	}
	secrets := w.c.secrets()
	messages = SanitizeString(messages, secrets...)
	return &PushRejectedError{
		Ref:            first.ReferenceName.String(),
		Reason:         SanitizeString(first.Status, secrets...),
		NonFastForward: isNonFastForward(first.Status, messages),
		RemoteMessage:  messages,
	}
}

// isAtomicFailure reports the status git gives the other references of an
// atomic push that failed.
func isAtomicFailure(status string) bool {
	return strings.Contains(status, "atomic")
}

// isNonFastForward tells, from the status of a reference the server did
// not update and from its messages, whether the server has commits the
// push lacks: the server found the update not a fast-forward
// (receive.denyNonFastForwards), or the reference moved between the
// advertisement and the update (git reports a failed lock, "is at X but
// expected Y"). Anything else, a hook or a protected branch, is a refusal.
func isNonFastForward(status, messages string) bool {
	for _, s := range []string{"non-fast-forward", "fetch first", "stale info"} {
		if strings.Contains(status, s) {
			return true
		}
	}
	// The reference moved under the push: git reports the failed lock as
	// "failed to update ref", or, in an atomic push, as "atomic
	// transaction failed", with "is at X but expected Y" in its messages.
	return (strings.Contains(status, "failed to update ref") || strings.Contains(status, "atomic transaction failed")) &&
		strings.Contains(messages, "but expected")
}

// maxRemoteMessages bounds what is kept of the server's messages.
const maxRemoteMessages = 4 << 10

// remoteMessages keeps the first kilobytes of what the server prints on
// the side band during a push. It is safe for concurrent use.
type remoteMessages struct {
	mu  sync.Mutex
	buf []byte
}

// Write implements io.Writer; what goes over the bound is dropped.
func (m *remoteMessages) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if room := maxRemoteMessages - len(m.buf); room > 0 {
		m.buf = append(m.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// String returns the messages, one line per message, without blank lines
// and carriage-return progress.
func (m *remoteMessages) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var lines []string
	for _, line := range strings.FieldsFunc(string(m.buf), func(r rune) bool { return r == '\n' || r == '\r' }) {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "\n")
}
