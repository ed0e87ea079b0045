package git

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/parallel"
)

// pushTransports are the transports the push tests run over.
var pushTransports = []string{"http", "https", "ssh"}

func TestWorkspace_Push(t *testing.T) {
	tests := []struct {
		name string
		opts PushOptions
		// setup prepares the server; it returns a check of what the
		// server saw, or nil.
		setup func(t *testing.T, p *pushRemote) func(g *WithT)
		// wantRefs are the references set to the new commit; every other
		// reference keeps its value.
		wantRefs []string
	}{
		{name: "to the checked-out branch", wantRefs: []string{"refs/heads/main"}},
		{name: "to a new branch", opts: PushOptions{Branch: "auto/update"}, wantRefs: []string{"refs/heads/auto/update"}},
		{name: "to an existing branch ahead of nothing", opts: PushOptions{Branch: "release"},
			setup: func(t *testing.T, p *pushRemote) func(*WithT) {
				if err := p.repo.SetBranch("release", "main"); err != nil {
					t.Fatal(err)
				}
				return nil
			}, wantRefs: []string{"refs/heads/release"}},
		{name: "with a refspec", opts: PushOptions{RefSpec: "refs/heads/main:refs/for/main"},
			wantRefs: []string{"refs/for/main"}},
		{name: "with a branch and a refspec", opts: PushOptions{Branch: "auto", RefSpec: "auto:refs/for/main"},
			wantRefs: []string{"refs/heads/auto", "refs/for/main"}},
		{name: "with a refspec to a short branch name", opts: PushOptions{RefSpec: "HEAD:auto"},
			wantRefs: []string{"refs/heads/auto"}},
		{name: "with push options", opts: PushOptions{Options: map[string]string{
			"merge_request.create": "", "merge_request.title": "Update images"}},
			setup:    recordPushOptions,
			wantRefs: []string{"refs/heads/main"}},
	}
	for _, transport := range pushTransports {
		for _, tt := range tests {
			t.Run(transport+"/"+tt.name, func(t *testing.T) {
				g := NewWithT(t)
				p := newPushRemote(t, transport)
				var check func(*WithT)
				if tt.setup != nil {
					check = tt.setup(t, p)
				}
				before := p.git(t, nil, "for-each-ref", "--format=%(refname) %(objectname)")
				w, _ := p.open(t, CheckoutOptions{Branch: "main", ShallowClone: true})
				hash := editAndCommit(t, w, map[string]string{"deploy/app.yaml": "kind: Deployment",
					"deploy/new.yaml": "kind: Service"}, "Update images")

				g.Expect(w.Push(context.Background(), tt.opts)).To(Succeed())

				for _, ref := range tt.wantRefs {
					g.Expect(p.remoteRef(t, ref)).To(Equal(hash), ref)
					g.Expect(p.git(t, nil, "show", ref+":deploy/new.yaml")).To(Equal("kind: Service"))
					g.Expect(p.git(t, nil, "rev-parse", ref+"^")).To(Equal(p.head), "%s builds on the checkout", ref)
				}
				for _, line := range strings.Split(before, "\n") {
					ref, _, _ := strings.Cut(line, " ")
					if !contains(tt.wantRefs, ref) {
						g.Expect(p.git(t, nil, "for-each-ref", "--format=%(refname) %(objectname)", ref)).
							To(Equal(line), "%s is unchanged", ref)
					}
				}
				if check != nil {
					check(g)
				}
			})
		}
	}
}

// recordPushOptions makes the server take push options and record them
// with a pre-receive hook, and returns the check of what it recorded.
func recordPushOptions(t *testing.T, p *pushRemote) func(*WithT) {
	t.Helper()
	seen := filepath.Join(t.TempDir(), "options")
	if err := p.repo.SetConfig("receive.advertisePushOptions", "true"); err != nil {
		t.Fatal(err)
	}
	err := p.repo.SetHook("pre-receive", "#!/bin/sh\n"+
		"{ echo \"$GIT_PUSH_OPTION_COUNT\"; echo \"$GIT_PUSH_OPTION_0\"; echo \"$GIT_PUSH_OPTION_1\"; } > '"+seen+"'\n")
	if err != nil {
		t.Fatal(err)
	}
	return func(g *WithT) {
		got, err := os.ReadFile(seen)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(got)).To(Equal("2\nmerge_request.create=\nmerge_request.title=Update images\n"))
	}
}

// contains reports whether s is one of list.
func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

func TestWorkspace_PushOptionsNeedAServerThatTakesThem(t *testing.T) {
	g := NewWithT(t)
	p := newPushRemote(t, "http")
	w, _ := p.open(t, CheckoutOptions{Branch: "main"})
	editAndCommit(t, w, map[string]string{"deploy/app.yaml": "changed"}, "change")
	err := w.Push(context.Background(), PushOptions{Options: map[string]string{"ci.skip": ""}})
	g.Expect(err).To(MatchError(ContainSubstring("does not accept push options")))
	g.Expect(p.remoteRef(t, "refs/heads/main")).To(Equal(p.head))
}

func TestWorkspace_PushRefusesUnsafeOptions(t *testing.T) {
	p := newPushRemote(t, "http")
	tests := []struct {
		name     string
		checkout CheckoutOptions
		opts     PushOptions
		wantErr  string
	}{
		{name: "forced refspec", opts: PushOptions{RefSpec: "+refs/heads/main:refs/heads/main"}, wantErr: "forced"},
		{name: "deleting refspec", opts: PushOptions{RefSpec: ":refs/heads/main"}, wantErr: "deleting"},
		{name: "pattern refspec", opts: PushOptions{RefSpec: "refs/heads/*:refs/heads/*"}, wantErr: "patterns"},
		{name: "not a refspec", opts: PushOptions{RefSpec: "main"}, wantErr: "src:dst"},
		{name: "unknown source", opts: PushOptions{RefSpec: "refs/heads/other:refs/heads/main"},
			wantErr: "neither HEAD"},
		{name: "unknown commit", opts: PushOptions{RefSpec: strings.Repeat("a", 40) + ":refs/heads/x"},
			wantErr: "not in the workspace"},
		{name: "invalid branch", opts: PushOptions{Branch: "bad..name"}, wantErr: "invalid branch"},
		{name: "push option with a newline", opts: PushOptions{Options: map[string]string{"a": "b\nc"}},
			wantErr: "push option"},
		{name: "tag checkout without a branch", checkout: CheckoutOptions{Tag: "v1"}, wantErr: "not a branch"},
	}
	if err := p.repo.Tag("v1", "main"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			checkout := tt.checkout
			if checkout.Tag == "" {
				checkout.Branch = "main"
			}
			w, _ := p.open(t, checkout)
			editAndCommit(t, w, map[string]string{"deploy/app.yaml": "changed"}, "change")
			before := p.srv.Requests()
			err := w.Push(context.Background(), tt.opts)
			var invalid *InvalidOptionsError
			g.Expect(errors.As(err, &invalid)).To(BeTrue(), "error %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.wantErr))
			g.Expect(p.srv.Requests()).To(Equal(before), "nothing is sent")
		})
	}
}

func TestWorkspace_PushFromACommitCheckout(t *testing.T) {
	g := NewWithT(t)
	p := newPushRemote(t, "http")
	w, _ := p.open(t, CheckoutOptions{Commit: p.head})
	hash := editAndCommit(t, w, map[string]string{"deploy/app.yaml": "changed"}, "change")
	g.Expect(w.Push(context.Background(), PushOptions{RefSpec: hash + ":refs/heads/from-commit"})).To(Succeed())
	g.Expect(p.remoteRef(t, "refs/heads/from-commit")).To(Equal(hash))
}

func TestWorkspace_RaceRefreshAndRetry(t *testing.T) {
	tests := []struct {
		transport string
		shallow   bool
	}{
		{transport: "http", shallow: false},
		{transport: "http", shallow: true},
		{transport: "ssh", shallow: true},
	}
	for _, tt := range tests {
		name := tt.transport + "/full"
		if tt.shallow {
			name = tt.transport + "/shallow"
		}
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			p := newPushRemote(t, tt.transport)
			p.repo.MustCommit(t, "main", map[string]string{"history.txt": "h"}, "history")
			w, commit := p.open(t, CheckoutOptions{Branch: "main", ShallowClone: tt.shallow})
			ops := registeredOperations()
			theirs := p.repo.MustCommit(t, "main", map[string]string{"theirs.txt": "t"}, "a concurrent change")
			editAndCommit(t, w, map[string]string{"deploy/app.yaml": "mine", "mine.txt": "m"}, "Update images")

			err := w.Push(ctx, PushOptions{})
			var rejected *PushRejectedError
			g.Expect(errors.As(err, &rejected)).To(BeTrue(), "error %v", err)
			g.Expect(rejected.NonFastForward).To(BeTrue())
			g.Expect(rejected.Ref).To(Equal("refs/heads/main"))
			g.Expect(p.remoteRef(t, "refs/heads/main")).To(Equal(theirs))

			g.Expect(w.Refresh(ctx, "")).To(Succeed())
			g.Expect(w.Head()).To(Equal(theirs))
			g.Expect(readWorkFile(t, w, "mine.txt")).To(BeEmpty())
			g.Expect(readWorkFile(t, w, "theirs.txt")).To(Equal("t"))
			mine := editAndCommit(t, w, map[string]string{"deploy/app.yaml": "mine", "mine.txt": "m"}, "Update images")
			g.Expect(w.Push(ctx, PushOptions{})).To(Succeed())

			g.Expect(p.remoteRef(t, "refs/heads/main")).To(Equal(mine))
			g.Expect(p.git(t, nil, "log", "--format=%s", "main")).To(Equal(
				"Update images\na concurrent change\nhistory\ninit"))
			g.Expect(p.git(t, nil, "rev-parse", "main^", "main~2")).To(Equal(theirs + "\n" + commit.Hash))
			g.Expect(registeredOperations()).To(Equal(ops), "every operation is released")
		})
	}
}

func TestWorkspace_RaceOnANewBranch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := newPushRemote(t, "http")
	w, _ := p.open(t, CheckoutOptions{Branch: "main", ShallowClone: true})
	theirs := p.repo.MustCommit(t, "auto", map[string]string{"theirs.txt": "t"}, "created by another run")
	editAndCommit(t, w, map[string]string{"deploy/app.yaml": "mine"}, "mine")

	err := w.Push(ctx, PushOptions{Branch: "auto"})
	var rejected *PushRejectedError
	g.Expect(errors.As(err, &rejected)).To(BeTrue(), "error %v", err)
	g.Expect(rejected.NonFastForward).To(BeTrue())

	g.Expect(w.Refresh(ctx, "auto")).To(Succeed())
	g.Expect(w.Head()).To(Equal(theirs))
	mine := editAndCommit(t, w, map[string]string{"deploy/app.yaml": "mine"}, "mine")
	g.Expect(w.Push(ctx, PushOptions{Branch: "auto"})).To(Succeed())
	g.Expect(p.remoteRef(t, "refs/heads/auto")).To(Equal(mine))
	g.Expect(p.remoteRef(t, "refs/heads/auto^")).To(Equal(theirs))
	g.Expect(p.remoteRef(t, "refs/heads/main")).To(Equal(p.head))
}

func TestWorkspace_PushRefusedByTheServer(t *testing.T) {
	for _, transport := range pushTransports {
		t.Run(transport, func(t *testing.T) {
			g := NewWithT(t)
			p := newPushRemote(t, transport)
			err := p.repo.SetHook("pre-receive", "#!/bin/sh\n"+
				"echo 'GL-HOOK-ERR: You are not allowed to push code to protected branches on this project.' >&2\n"+
				"exit 1\n")
			g.Expect(err).NotTo(HaveOccurred())
			w, _ := p.open(t, CheckoutOptions{Branch: "main"})
			editAndCommit(t, w, map[string]string{"deploy/app.yaml": "mine"}, "mine")

			err = w.Push(context.Background(), PushOptions{})
			var rejected *PushRejectedError
			g.Expect(errors.As(err, &rejected)).To(BeTrue(), "error %v", err)
			g.Expect(rejected.NonFastForward).To(BeFalse())
			g.Expect(rejected.Ref).To(Equal("refs/heads/main"))
			g.Expect(rejected.Reason).To(Equal("pre-receive hook declined"))
			g.Expect(rejected.RemoteMessage).To(ContainSubstring("not allowed to push code to protected branches"))
			g.Expect(err.Error()).To(ContainSubstring("not allowed to push code to protected branches"))
			g.Expect(p.remoteRef(t, "refs/heads/main")).To(Equal(p.head))
		})
	}
}

func TestWorkspace_PushWithRefusedCredentials(t *testing.T) {
	tests := []struct {
		transport string
		refuse    func(p *pushRemote)
	}{
		{transport: "http", refuse: func(p *pushRemote) { p.srv.SetBasicAuth(testUser, "another-password") }},
		{transport: "https", refuse: func(p *pushRemote) { p.srv.SetBasicAuth(testUser, "another-password") }},
		{transport: "ssh", refuse: func(p *pushRemote) {
			signer, err := parseIdentity(p.data["identity"], "")
			if err != nil {
				panic(err)
			}
			p.srv.RevokeSSHKey(signer.PublicKey())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.transport, func(t *testing.T) {
			g := NewWithT(t)
			p := newPushRemote(t, tt.transport)
			w, _ := p.open(t, CheckoutOptions{Branch: "main"})
			editAndCommit(t, w, map[string]string{"deploy/app.yaml": "mine"}, "mine")
			tt.refuse(p)

			err := w.Push(context.Background(), PushOptions{})
			g.Expect(err).To(HaveOccurred())
			t.Logf("push error: %v", err)
			g.Expect(IsAuthError(err)).To(BeTrue(), "IsAuthError(%v)", err)
			expectNoSecrets(g, err)
			g.Expect(p.remoteRef(t, "refs/heads/main")).To(Equal(p.head))

			err = w.Refresh(context.Background(), "")
			g.Expect(IsAuthError(err)).To(BeTrue(), "IsAuthError(%v)", err)
			expectNoSecrets(g, err)
		})
	}
}

func TestWorkspace_PushHonoursItsContext(t *testing.T) {
	for _, transport := range pushTransports {
		t.Run(transport, func(t *testing.T) {
			g := NewWithT(t)
			p := newPushRemote(t, transport)
			dir := t.TempDir()
			started, release, finished := filepath.Join(dir, "started"), filepath.Join(dir, "release"),
				filepath.Join(dir, "finished")
			// The hook holds the push until released (a minute at most),
			// then refuses it.
			err := p.repo.SetHook("pre-receive", "#!/bin/sh\n"+
				"touch '"+started+"'\n"+
				"i=0\nwhile [ ! -e '"+release+"' ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n"+
				"touch '"+finished+"'\nexit 1\n")
			g.Expect(err).NotTo(HaveOccurred())
			t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o600) })
			w, _ := p.open(t, CheckoutOptions{Branch: "main"})
			editAndCommit(t, w, map[string]string{"deploy/app.yaml": "mine"}, "mine")

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- w.Push(ctx, PushOptions{}) }()
			g.Eventually(func() string { return started }).WithTimeout(time.Minute).
				WithPolling(20 * time.Millisecond).Should(BeAnExistingFile())
			cancel()
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatal("Push did not return after its context was cancelled")
			}
			g.Expect(err).To(MatchError(context.Canceled))
			g.Expect(finished).NotTo(BeAnExistingFile(), "Push returned while the server still held it")
		})
	}
}

func TestIsNonFastForward(t *testing.T) {
	tests := []struct {
		status, messages string
		want             bool
	}{
		{status: "non-fast-forward", want: true},
		{status: "fetch first", want: true},
		{status: "stale info", want: true},
		{status: "failed to update ref",
			messages: "error: cannot lock ref 'refs/heads/main': is at 1111 but expected 2222", want: true},
		{status: "failed to update ref", messages: "error: unable to write", want: false},
		{status: "atomic transaction failed",
			messages: "error: cannot lock ref 'refs/heads/main': is at 1111 but expected 2222", want: true},
		{status: "atomic transaction failed", messages: "error: unable to write", want: false},
		{status: "pre-receive hook declined", messages: "protected branch", want: false},
		{status: "hook declined", want: false},
		{status: "deny updating a hidden ref", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.status+"/"+tt.messages, func(t *testing.T) {
			NewWithT(t).Expect(isNonFastForward(tt.status, tt.messages)).To(Equal(tt.want))
		})
	}
}

func TestRemoteMessages(t *testing.T) {
	g := NewWithT(t)
	m := &remoteMessages{}
	_, _ = m.Write([]byte("Counting: 10%\rCounting: 100%\r\n\nGL-HOOK-ERR: protected\n"))
	g.Expect(m.String()).To(Equal("Counting: 10%\nCounting: 100%\nGL-HOOK-ERR: protected"))
	n, err := m.Write(make([]byte, 2*maxRemoteMessages))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(2 * maxRemoteMessages))
	g.Expect(len(m.buf)).To(Equal(maxRemoteMessages))

	e := &PushRejectedError{Ref: "refs/heads/main", Reason: "hook declined", RemoteMessage: "line 1\nline 2"}
	g.Expect(e.Error()).To(Equal("push to refs/heads/main rejected: hook declined (remote: line 1; line 2)"))
}

func TestWorkspace_PushAndRefreshGoThroughTheOperation(t *testing.T) {
	g := NewWithT(t)
	p := newPushRemote(t, "http")
	proxy := &forwardProxy{user: "proxy-user", password: "proxy-pa55-value"}
	ps := httptest.NewServer(proxy)
	defer ps.Close()
	popts, err := NewProxyOptions(map[string][]byte{"address": []byte(ps.URL),
		"username": []byte(proxy.user), "password": []byte(proxy.password)})
	g.Expect(err).NotTo(HaveOccurred())
	c, _ := newTestClient(t, p.auth, popts)
	w, _, err := c.Open(context.Background(), p.url, CheckoutOptions{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	hash := editAndCommit(t, w, map[string]string{"deploy/app.yaml": "mine"}, "mine")

	// The push is sent through the user's proxy, which only the
	// operation's transport knows of, and counted against the transfer
	// limit.
	forwarded, received := proxy.forwarded.Load(), c.limits.transfer.used.Load()
	g.Expect(w.Push(context.Background(), PushOptions{})).To(Succeed())
	g.Expect(p.remoteRef(t, "refs/heads/main")).To(Equal(hash))
	g.Expect(proxy.forwarded.Load()-forwarded).To(Equal(int64(2)), "advertisement and receive-pack")
	g.Expect(c.limits.transfer.used.Load()).To(BeNumerically(">", received))

	forwarded = proxy.forwarded.Load()
	g.Expect(w.Refresh(context.Background(), "")).To(Succeed())
	g.Expect(proxy.forwarded.Load()).To(BeNumerically(">", forwarded))
}

// TestWorkspace_PushSurvivesAPanicInThePackEncoder proves that a panic in
// the goroutine that encodes the pack (here after the pack's first bytes)
// fails that push with an error naming the panic, instead of ending the
// process: the remote keeps its branch, and the same workspace pushes once
// the encoder works again.
func TestWorkspace_PushSurvivesAPanicInThePackEncoder(t *testing.T) {
	for _, transport := range pushTransports {
		t.Run(transport, func(t *testing.T) {
			g := NewWithT(t)
			p := newPushRemote(t, transport)
			w, _ := p.open(t, CheckoutOptions{Branch: "main"})
			hash := editAndCommit(t, w, map[string]string{"deploy/app.yaml": "kind: Deployment"}, "Update images")

			real := encodePack
			t.Cleanup(func() { encodePack = real })
			encodePack = func(out io.Writer, _ storer.EncodedObjectStorer, _ []plumbing.Hash, _ bool, _ uint) error {
				_, _ = out.Write([]byte("PACK\x00\x00\x00\x02"))
				panic("encoder boom")
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := w.Push(ctx, PushOptions{})
			g.Expect(err).To(MatchError(ContainSubstring("encoding the pack: panicked: encoder boom")))
			var panicked *parallel.PanicError
			g.Expect(errors.As(err, &panicked)).To(BeTrue(), "%v", err)
			g.Expect(ctx.Err()).NotTo(HaveOccurred(), "the push waited for its deadline")
			g.Expect(p.remoteRef(t, "refs/heads/main")).To(Equal(p.head))

			encodePack = real
			g.Expect(w.Push(context.Background(), PushOptions{})).To(Succeed())
			g.Expect(p.remoteRef(t, "refs/heads/main")).To(Equal(hash))
		})
	}
}
