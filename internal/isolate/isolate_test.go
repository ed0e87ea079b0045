package isolate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// testRole is a child that reads one command line, says "started", and
// does what the command asks: "echo <text>", "alloc <bytes>", "loop",
// "write <bytes>", "fail", "pid".
const testRole = "isolate-test"

func init() {
	Serve(testRole, func(in io.Reader, out io.Writer) int {
		line, err := bufio.NewReader(in).ReadString('\n')
		if err != nil {
			return 1
		}
		fmt.Fprintln(out, "started")
		verb, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
		n, _ := strconv.Atoi(arg)
		switch verb {
		case "echo":
			fmt.Fprintln(out, arg)
		case "alloc":
			held := make([]byte, n)
			for i := range held {
				held[i] = 1
			}
			fmt.Fprintln(out, len(held))
		case "loop":
			for {
			}
		case "write":
			_, _ = out.Write([]byte(strings.Repeat("x", n)))
		case "pid":
			fmt.Fprintln(out, os.Getpid())
		case "fail":
			fmt.Fprintln(os.Stderr, "the work failed\nsecond line")
			return 7
		}
		return 0
	})
}

// runTest starts a test child from pool with command and returns the
// line it answered after "started", and End's error.
func runTest(ctx context.Context, pool *Pool, job Job, command string) (string, error) {
	job.Role = testRole
	proc, err := pool.Start(ctx, job)
	if err != nil {
		return "", err
	}
	return talk(proc, command)
}

// talk gives proc command, and returns the line it answered after
// "started", and End's error.
func talk(proc *Process, command string) (string, error) {
	fmt.Fprintln(proc.In, command)
	r := bufio.NewReader(proc.Out)
	started, err := r.ReadString('\n')
	if err != nil || started != "started\n" {
		return "", proc.End(true)
	}
	proc.Started()
	answer, err := r.ReadString('\n')
	return strings.TrimSpace(answer), proc.End(err != nil)
}

func TestEndSaysWhichLimitEndedTheChild(t *testing.T) {
	job := Job{Memory: 64 << 20, Output: 64 << 10, Time: time.Minute}
	for _, tc := range []struct {
		name    string
		command string
		time    time.Duration
		want    error
	}{
		{"more memory than its limit", "alloc 268435456", 0, ErrMemory},
		{"more output than its limit", "write 2097152", 0, ErrOutput},
		{"longer than its time", "loop", time.Second, ErrTime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			j := job
			if tc.time > 0 {
				j.Time = tc.time
			}
			_, err := runTest(context.Background(), NewPool(64<<20), j, tc.command)
			g.Expect(err).To(MatchError(tc.want))
		})
	}

	t.Run("its own failure", func(t *testing.T) {
		g := NewWithT(t)
		_, err := runTest(context.Background(), NewPool(64<<20), job, "fail")
		var exit *ExitError
		g.Expect(errors.As(err, &exit)).To(BeTrue(), "%v", err)
		g.Expect(exit.Stderr).To(Equal("the work failed"))
		g.Expect(err).To(MatchError(ContainSubstring("exit status 7")))
	})

	t.Run("its context", func(t *testing.T) {
		g := NewWithT(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := runTest(ctx, NewPool(64<<20), job, "loop")
		g.Expect(err).To(MatchError(ErrTime))
		g.Expect(err).To(MatchError(context.DeadlineExceeded))
	})

	t.Run("none", func(t *testing.T) {
		g := NewWithT(t)
		answer, err := runTest(context.Background(), NewPool(64<<20), job, "alloc 1048576")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(answer).To(Equal("1048576"))
	})
}

func TestPoolBoundsTheMemoryOfItsChildrenTogether(t *testing.T) {
	g := NewWithT(t)
	pool := NewPool(96 << 20)
	job := Job{Role: testRole, Memory: 64 << 20, Output: 1 << 10, Time: time.Minute}

	_, err := pool.Start(context.Background(), Job{Role: testRole, Memory: 128 << 20})
	g.Expect(err).To(MatchError(ContainSubstring("does not fit in the 96 MiB")))

	first, err := pool.Start(context.Background(), job)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Running(testRole)).To(HaveLen(1))
	// A second child would pass the pool's total: it waits for the first.
	second := make(chan error, 1)
	go func() {
		answer, err := runTest(context.Background(), pool, job, "echo second")
		if err == nil && answer != "second" {
			err = fmt.Errorf("answered %q", answer)
		}
		second <- err
	}()
	g.Consistently(second, 2*time.Second).ShouldNot(Receive())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = pool.Start(ctx, job)
	g.Expect(err).To(MatchError(context.Canceled), "the wait ends with its context")

	g.Expect(first.End(true)).To(Succeed())
	g.Eventually(second, time.Minute).Should(Receive(BeNil()))
	g.Expect(Running(testRole)).To(BeEmpty())
}

func TestChildEndsWhenItsParentIsGone(t *testing.T) {
	g := NewWithT(t)
	exe, err := os.Executable()
	g.Expect(err).NotTo(HaveOccurred())
	// The child waits for its command on a pipe that stays open, started
	// by a shell that exits at once: the child outlives its parent.
	r, w, err := os.Pipe()
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Close()
	sh := exec.Command("sh", "-c", envParent+`=$$ "$0" <&3 >/dev/null 2>&1 & echo $!`, exe)
	sh.Env = append(os.Environ(), envRole+"="+testRole, envMemory+"=67108864")
	sh.ExtraFiles = []*os.File{r}
	out, err := sh.Output()
	r.Close()
	g.Expect(err).NotTo(HaveOccurred())
	pid := strings.TrimSpace(string(out))
	g.Expect(pid).NotTo(BeEmpty())

	// Gone, or a zombie that nobody reaps, once it saw its parent go.
	g.Eventually(func() string {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return "gone"
		}
		return strings.Fields(string(stat))[2]
	}, 10*time.Second, 20*time.Millisecond).Should(BeElementOf("gone", "Z", "X"))
}

// runTurn runs command on a child of turns, as runTest does.
func runTurn(ctx context.Context, turns *Turns, command string) (string, error) {
	proc, err := turns.Start(ctx, 0)
	if err != nil {
		return "", err
	}
	return talk(proc, command)
}

var turnErrors = Errors{Memory: ErrMemory, Output: ErrOutput, Timeout: ErrTime}

// TestTurnsGiveTheNextJobToAChildWhoseJobEndedWell: a child that did its
// job does the next; one that failed, went past a limit or was given up
// on is never used again.
func TestTurnsGiveTheNextJobToAChildWhoseJobEndedWell(t *testing.T) {
	g := NewWithT(t)
	turns := NewTurns(testRole, Limits{Memory: 64 << 20, Output: 64 << 10, Concurrency: 1, Time: time.Minute}, turnErrors, nil)
	defer turns.retireIdle()
	pid := func() string {
		answer, err := runTurn(context.Background(), turns, "pid")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(answer).NotTo(BeEmpty())
		return answer
	}

	first := pid()
	g.Expect(pid()).To(Equal(first), "the child that did a job does the next")
	answer, err := runTurn(context.Background(), turns, "echo hello")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(answer).To(Equal("hello"))
	g.Expect(pid()).To(Equal(first))

	for _, command := range []string{"fail", "alloc 268435456", "write 2097152"} {
		_, err := runTurn(context.Background(), turns, command)
		g.Expect(err).To(HaveOccurred(), command)
		next := pid()
		g.Expect(next).NotTo(Equal(first), "after %q a new child does the next job", command)
		first = next
	}

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = runTurn(ctx, turns, "loop")
	g.Expect(err).To(MatchError(ErrTime))
	g.Expect(pid()).NotTo(Equal(first), "a child whose context ended is not used again")
	g.Expect(live(turns)).To(Equal(1), "one child at a time")
}

// TestIdleChildrenGiveTheirMemoryBack: a child waiting for its next job
// ends after the idle time, and at once when another kind of work sharing
// the pool needs its memory.
func TestIdleChildrenGiveTheirMemoryBack(t *testing.T) {
	g := NewWithT(t)
	limits := Limits{Memory: 64 << 20, Output: 64 << 10, Concurrency: 1, Time: time.Minute}
	pool := NewPool(64 << 20)
	renders, builds := NewTurns(testRole, limits, turnErrors, pool), NewTurns(testRole, limits, turnErrors, pool)
	defer builds.retireIdle()

	_, err := runTurn(context.Background(), renders, "echo render")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Running(testRole)).To(BeEmpty(), "the render's child waits for the next render")
	g.Expect(idleCount(renders)).To(Equal(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answer, err := runTurn(ctx, builds, "echo build")
	g.Expect(err).NotTo(HaveOccurred(), "the idle child gave its memory to the build")
	g.Expect(answer).To(Equal("build"))
	g.Expect(idleCount(renders)).To(BeZero(), "the render's idle child ended")
	g.Expect(idleCount(builds)).To(Equal(1))

	// A child whose job ends while another waits for its memory exits.
	held, err := renders.Start(context.Background(), 0)
	g.Expect(err).NotTo(HaveOccurred())
	waited := make(chan error, 1)
	go func() {
		_, err := runTurn(context.Background(), builds, "echo build")
		waited <- err
	}()
	g.Eventually(pool.waiting.Load, 10*time.Second, 10*time.Millisecond).Should(Equal(int64(1)))
	answer, err = talk(held, "echo render")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(answer).To(Equal("render"))
	g.Eventually(waited, 10*time.Second).Should(Receive(BeNil()), "the build got the render's memory")
	g.Expect(idleCount(renders)).To(BeZero())

	was := idleTimeout
	idleTimeout = 100 * time.Millisecond
	defer func() { idleTimeout = was }()
	_, err = runTurn(context.Background(), renders, "echo render")
	g.Expect(err).NotTo(HaveOccurred())
	builds.retireIdle()
	g.Eventually(func() int { return idleCount(renders) }, 10*time.Second, 20*time.Millisecond).Should(BeZero(),
		"an idle child ends after the idle time")
	g.Eventually(func() int { return live(renders) }, 10*time.Second, 20*time.Millisecond).Should(BeZero())
}

// idleCount returns how many children of t wait for their next job.
func idleCount(t *Turns) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.idle)
}

// live returns how many children of t have not ended.
func live(t *Turns) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.live
}
