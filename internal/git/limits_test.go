package git

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/storage/memory"
	. "github.com/onsi/gomega"
)

// The limits the tests set: small, so that a few hundred KiB exceed them.
const (
	smallLimit = 64 << 10
	largeLimit = 4 << 20
)

// randomContent returns n bytes of incompressible data.
func randomContent(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// zeros returns n zero bytes: a blob whose pack is tiny.
func zeros(n int) string {
	return string(make([]byte, n))
}

// limitedRepo is a served repository reachable over several transports.
type limitedRepo struct {
	*served
	urls map[string]string            // transport -> clone URL
	data map[string]map[string][]byte // transport -> Secret data
}

// newLimitedRepo serves a repository holding files (on top of the init
// commit) over http with basic auth, over ssh and as a local path.
func newLimitedRepo(t *testing.T, files map[string]string) *limitedRepo {
	s := newServed(t)
	if len(files) > 0 {
		s.head = s.repo.MustCommit(t, "main", files, "content")
	}
	s.srv.SetBasicAuth(testUser, testPassword)
	_, identity := s.srv.AuthorizedSSHKeyForTest(t)
	return &limitedRepo{
		served: s,
		urls: map[string]string{
			"http": s.srv.MustStartHTTP(t) + "/repo.git",
			"ssh":  s.srv.MustStartSSH(t) + "/repo.git",
			"file": "file://" + s.repo.Path(),
		},
		data: map[string]map[string][]byte{
			"http": basicAuthData(testPassword),
			"ssh":  sshData(identity, s.srv.KnownHosts()),
		},
	}
}

// addRefs creates n tags with long names, so that the reference
// advertisement alone is large.
func addRefs(t *testing.T, s *served, n int) {
	t.Helper()
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "create refs/tags/%s-%05d %s\n", strings.Repeat("padding", 14), i, s.head)
	}
	cmd := s.srv.GitCommand(s.repo.Path(), "update-ref", "--stdin")
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("update-ref: %v\n%s", err, out)
	}
}

// registeredOperations counts the operations still registered.
func registeredOperations() int {
	n := 0
	operations.Range(func(any, any) bool { n++; return true })
	return n
}

// expectTooLarge asserts that err reports limit at max, with nothing secret
// in it, and that the client let go of the clone.
func expectTooLarge(t *testing.T, g *WithT, c *Client, err error, limit Limit, max int64) {
	t.Helper()
	g.Expect(err).To(HaveOccurred())
	t.Logf("clone error: %v", err)
	g.Expect(errors.Is(err, ErrTooLarge)).To(BeTrue(), "errors.Is(%v, ErrTooLarge)", err)
	var tooLarge *TooLargeError
	g.Expect(errors.As(err, &tooLarge)).To(BeTrue())
	g.Expect(tooLarge.Limit).To(Equal(limit))
	g.Expect(tooLarge.Max).To(Equal(max))
	g.Expect(err.Error()).To(ContainSubstring(string(limit) + " limit of " + formatBytes(max)))
	g.Expect(IsAuthError(err)).To(BeFalse())
	expectNoSecrets(g, err)
	g.Expect(c.storage).To(BeNil(), "objects released")
	g.Expect(registeredOperations()).To(BeZero(), "operation released")
}

// diskUsage adds up the sizes of the regular files under dir.
func diskUsage(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return total
}

func TestClone_ByteLimits(t *testing.T) {
	random := randomContent(t, 300<<10)
	bigZeros := zeros(50 << 20)
	tests := []struct {
		name       string
		files      map[string]string
		refs       int      // extra references to advertise
		transports []string // default: http, ssh and file
		opts       CheckoutOptions
		want       Limit // "" for a successful clone
		wantMax    int64
	}{
		{name: "under the limits", files: map[string]string{"data.bin": random},
			opts: CheckoutOptions{MaxTransferBytes: largeLimit, MaxObjectBytes: largeLimit, MaxCheckoutBytes: largeLimit}},
		{name: "pack over the transfer limit", files: map[string]string{"data.bin": random},
			opts: CheckoutOptions{MaxTransferBytes: smallLimit}, want: LimitTransfer, wantMax: smallLimit},
		{name: "reference advertisement over the transfer limit", refs: 1000, transports: []string{"http", "ssh"},
			opts: CheckoutOptions{MaxTransferBytes: smallLimit}, want: LimitTransfer, wantMax: smallLimit},
		{name: "ls-remote over the transfer limit", refs: 1000, transports: []string{"http", "ssh"},
			opts: CheckoutOptions{MaxTransferBytes: smallLimit, LastObservedCommit: "main@sha1:" + strings.Repeat("0", 40)},
			want: LimitTransfer, wantMax: smallLimit},
		{name: "compressible blob over the object limit", files: map[string]string{"zeros.bin": bigZeros},
			opts: CheckoutOptions{MaxObjectBytes: 1 << 20}, want: LimitObjects, wantMax: 1 << 20},
		{name: "compressible blob over the checkout limit", files: map[string]string{"zeros.bin": bigZeros},
			opts: CheckoutOptions{MaxCheckoutBytes: 1 << 20}, want: LimitCheckout, wantMax: 1 << 20},
		{name: "one blob at many paths over the checkout limit", files: sameContentAt(64, random[:256<<10]),
			opts: CheckoutOptions{MaxObjectBytes: largeLimit, MaxCheckoutBytes: largeLimit},
			want: LimitCheckout, wantMax: largeLimit},
		{name: "one blob at many paths over the checkout limit, in memory", files: sameContentAt(64, random[:256<<10]),
			opts: CheckoutOptions{MaxObjectBytes: largeLimit, MaxCheckoutBytes: largeLimit, InMemory: true},
			want: LimitCheckout, wantMax: largeLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := newLimitedRepo(t, tt.files)
			addRefs(t, repo.served, tt.refs)
			transports := tt.transports
			if transports == nil {
				transports = []string{"http", "ssh", "file"}
			}
			for _, tr := range transports {
				t.Run(tr, func(t *testing.T) {
					runLimitCase(t, repo, tr, tt.opts, tt.want, tt.wantMax, tt.files)
				})
			}
		})
	}
}

// runLimitCase clones repo over transport tr and checks the outcome.
func runLimitCase(t *testing.T, repo *limitedRepo, tr string, opts CheckoutOptions,
	want Limit, wantMax int64, files map[string]string) {
	g := NewWithT(t)
	rawURL := repo.urls[tr]
	var auth *AuthOptions
	if data := repo.data[tr]; data != nil {
		auth = authFor(t, rawURL, data)
	}
	c, dir := newTestClient(t, auth, nil)
	opts.Branch = "main"
	commit, err := c.Clone(context.Background(), rawURL, opts)
	if want != "" {
		expectTooLarge(t, g, c, err, want, wantMax)
		if want == LimitCheckout {
			g.Expect(diskUsage(t, dir)).To(BeNumerically("<=", wantMax))
		}
		return
	}
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(commit.Hash).To(Equal(repo.head))
	for name, content := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(got) == content).To(BeTrue(), "content of %s", name)
	}
	g.Expect(registeredOperations()).To(BeZero())
}

// sameContentAt returns n paths holding content: one blob, n files.
func sameContentAt(n int, content string) map[string]string {
	files := make(map[string]string, n)
	for i := range n {
		files[fmt.Sprintf("copies/%03d.bin", i)] = content
	}
	return files
}

func TestClone_SubmodulesShareTheLimits(t *testing.T) {
	const limit = 300 << 10 // the parent or the submodule alone fits
	tests := []struct {
		name string
		opts CheckoutOptions
		want Limit
	}{
		{name: "transfer", opts: CheckoutOptions{MaxTransferBytes: limit}, want: LimitTransfer},
		{name: "objects", opts: CheckoutOptions{MaxObjectBytes: limit}, want: LimitObjects},
		{name: "checkout", opts: CheckoutOptions{MaxCheckoutBytes: limit}, want: LimitCheckout},
		{name: "under the limits", opts: CheckoutOptions{MaxTransferBytes: largeLimit,
			MaxObjectBytes: largeLimit, MaxCheckoutBytes: largeLimit}},
	}
	for _, transport := range []string{"http", "ssh"} {
		s := newServed(t)
		base, data := startTransport(t, s, transport)
		sub := s.srv.MustInitRepo(t, "sub.git", "main")
		sub.MustCommit(t, "main", map[string]string{"lib.bin": randomContent(t, 200<<10)}, "lib")
		pushParentWithSubmodule(t, s, "parent.git", "../sub.git", sub)
		parent, err := s.srv.Repo("parent.git")
		if err != nil {
			t.Fatal(err)
		}
		parent.MustCommit(t, "main", map[string]string{"app.bin": randomContent(t, 200<<10)}, "app")
		rawURL := base + "/parent.git"
		for _, tt := range tests {
			t.Run(transport+", "+tt.name, func(t *testing.T) {
				g := NewWithT(t)
				c, dir := newTestClient(t, authFor(t, rawURL, data), nil)
				opts := tt.opts
				opts.Branch, opts.RecurseSubmodules = "main", true
				_, err := c.Clone(context.Background(), rawURL, opts)
				if tt.want != "" {
					expectTooLarge(t, g, c, err, tt.want, limit)
					return
				}
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(listFiles(t, dir)).To(Equal([]string{".gitmodules", "app.bin", "app.txt", "libs/sub/lib.bin"}))
			})
		}
	}
}

func TestClone_TooLargeReleasesTheObjects(t *testing.T) {
	g := NewWithT(t)
	// 64 MiB inflated in memory, then the checkout stops at 1 MiB.
	repo := newLimitedRepo(t, map[string]string{"zeros.bin": zeros(64 << 20)})
	c, _ := newTestClient(t, authFor(t, repo.urls["http"], repo.data["http"]), nil)
	before := liveHeap()
	_, err := c.Clone(context.Background(), repo.urls["http"], CheckoutOptions{Branch: "main", MaxCheckoutBytes: 1 << 20})
	expectTooLarge(t, g, c, err, LimitCheckout, 1<<20)
	grown := liveHeap() - before
	t.Logf("live heap grew by %d KiB", grown>>10)
	g.Expect(grown).To(BeNumerically("<", 16<<20), "the client still holds the objects")
	runtime.KeepAlive(c)
}

// liveHeap returns the bytes of live heap objects, after collecting the
// garbage and emptying the sync.Pools.
func liveHeap() int64 {
	for range 3 {
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func TestClone_NegativeLimitIsInvalid(t *testing.T) {
	s := newServed(t)
	rawURL := s.srv.MustStartHTTP(t) + "/repo.git"
	for _, opts := range []CheckoutOptions{{MaxTransferBytes: -1}, {MaxObjectBytes: -1}, {MaxCheckoutBytes: -1}} {
		g := NewWithT(t)
		c, _ := newTestClient(t, nil, nil)
		before := s.srv.Requests()
		_, err := c.Clone(context.Background(), rawURL, opts)
		var invalid *InvalidOptionsError
		g.Expect(errors.As(err, &invalid)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("must not be negative"))
		g.Expect(s.srv.Requests()).To(Equal(before))
	}
}

func TestNewCloneLimits_Defaults(t *testing.T) {
	g := NewWithT(t)
	l := newCloneLimits(CheckoutOptions{})
	g.Expect(l.transfer.max).To(Equal(DefaultMaxTransferBytes))
	g.Expect(l.packs.max).To(Equal(DefaultMaxTransferBytes))
	g.Expect(l.objects.max).To(Equal(DefaultMaxObjectBytes))
	g.Expect(l.checkout.max).To(Equal(DefaultMaxCheckoutBytes))
	l = newCloneLimits(CheckoutOptions{MaxTransferBytes: 1, MaxObjectBytes: 2, MaxCheckoutBytes: 3})
	g.Expect([]int64{l.transfer.max, l.packs.max, l.objects.max, l.checkout.max}).To(Equal([]int64{1, 1, 2, 3}))
}

func TestTooLargeError(t *testing.T) {
	tests := []struct {
		err  *TooLargeError
		want string
	}{
		{&TooLargeError{Limit: LimitTransfer, Max: 64 << 10}, "repository too large: the data received from " +
			"the remote exceeds the transfer limit of 64 KiB"},
		{&TooLargeError{Limit: LimitObjects, Max: 2 << 30}, "repository too large: the uncompressed size of " +
			"the fetched objects exceeds the objects limit of 2 GiB"},
		{&TooLargeError{Limit: LimitCheckout, Max: 1000}, "repository too large: the size of the files " +
			"checked out exceeds the checkout limit of 1000 bytes"},
	}
	for _, tt := range tests {
		g := NewWithT(t)
		g.Expect(tt.err.Error()).To(Equal(tt.want))
		g.Expect(errors.Is(fmt.Errorf("wrapped: %w", tt.err), ErrTooLarge)).To(BeTrue())
		g.Expect(errors.Is(SanitizeError(fmt.Errorf("http://u:p@h/ %w", tt.err)), ErrTooLarge)).To(BeTrue())
	}
}

func TestByteBudget(t *testing.T) {
	tests := []struct {
		name    string
		max     int64
		takes   []int64
		wantErr []bool
	}{
		{name: "exactly the limit fits", max: 10, takes: []int64{4, 6, 0}, wantErr: []bool{false, false, false}},
		{name: "one byte over", max: 10, takes: []int64{4, 7, 1}, wantErr: []bool{false, true, true}},
		{name: "a single huge take", max: 10, takes: []int64{math.MaxInt64, 1}, wantErr: []bool{true, true}},
		{name: "no overflow near MaxInt64", max: math.MaxInt64, takes: []int64{math.MaxInt64 - 1, 1, 1},
			wantErr: []bool{false, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := newBudget(LimitObjects, tt.max, 1)
			for i, n := range tt.takes {
				err := b.take(n)
				g.Expect(err != nil).To(Equal(tt.wantErr[i]), "take #%d", i)
			}
		})
	}
	g := NewWithT(t)
	var unlimited *byteBudget
	g.Expect(unlimited.take(math.MaxInt64)).To(Succeed())
	g.Expect(unlimited.exceeded()).To(Succeed())
}

func TestDeltaHead_TargetSize(t *testing.T) {
	tests := []struct {
		name    string
		head    []byte
		want    int64
		wantErr bool
	}{
		{name: "one-byte sizes", head: []byte{0x05, 0x7f, 0x90}, want: 0x7f},
		{name: "multi-byte target", head: []byte{0x01, 0x80, 0x80, 0x04}, want: 1 << 16},
		{name: "truncated", head: []byte{0x01, 0x80}, wantErr: true},
		{name: "empty", wantErr: true},
		{name: "absurd size is capped", head: append([]byte{0x00}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			0xff, 0x01), want: 1 << 62},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var h deltaHead
			_, _ = h.Write(tt.head)
			got, err := h.targetSize()
			if tt.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestHTTPRouter_OtherCallersUnchanged(t *testing.T) {
	g := NewWithT(t)
	g.Expect(client.Protocols["http"]).To(BeAssignableToTypeOf(&httpRouter{}))
	g.Expect(client.Protocols["https"]).To(BeAssignableToTypeOf(&httpRouter{}))

	// go-git used directly, without a Client, goes to the default transport.
	s := newServed(t)
	rawURL := s.srv.MustStartHTTP(t) + "/repo.git"
	rem := gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{rawURL}})
	refs, err := rem.List(&gogit.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refs).NotTo(BeEmpty())

	// An endpoint routed to an operation that has ended fails rather than
	// running unbounded.
	rem = gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{rawURL}})
	_, err = rem.List(&gogit.ListOptions{ProxyOptions: transport.ProxyOptions{URL: ctxDialScheme + "://0"}})
	g.Expect(err).To(MatchError(ContainSubstring("operation has ended")))
}
