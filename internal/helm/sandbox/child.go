package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	apijson "k8s.io/apimachinery/pkg/util/json"
)

// The environment of a child: envChild marks it, envMemory holds its
// memory limit in bytes, envParent the pid of the process it answers.
const (
	envChild  = "WINDLASS_HELM_SANDBOX"
	envMemory = "WINDLASS_HELM_SANDBOX_MEMORY"
	envParent = "WINDLASS_HELM_SANDBOX_PARENT"
)

// exitMemory is the exit code of a child that went past its memory limit.
const exitMemory = 3

// request is what the parent sends a child.
type request struct {
	Chart        *wireChart            `json:"chart"`
	Values       *wireValue            `json:"values"`
	Release      common.ReleaseOptions `json:"release"`
	Capabilities *common.Capabilities  `json:"capabilities"`
	Lookup       bool                  `json:"lookup,omitempty"`
	Output       int64                 `json:"output"`
}

// childMessage is what a child sends its parent: a lookup call, or the
// rendered files, or the error that ended the render.
type childMessage struct {
	Started        bool              `json:"started,omitempty"`
	Lookup         *lookupCall       `json:"lookup,omitempty"`
	Rendered       map[string]string `json:"rendered,omitempty"`
	Error          string            `json:"error,omitempty"`
	OutputExceeded bool              `json:"outputExceeded,omitempty"`
}

// lookupCall is one call of the lookup template function.
type lookupCall struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
}

// lookupReply answers a lookupCall.
type lookupReply struct {
	Object json.RawMessage `json:"object,omitempty"`
	Error  string          `json:"error,omitempty"`
}

func init() {
	if os.Getenv(envChild) != "1" {
		return
	}
	os.Exit(runChild(os.Stdin, os.Stdout))
}

// runChild is the whole life of a child: it bounds its memory, then
// renders what it reads from in and writes the outcome to out.
func runChild(in io.Reader, out io.Writer) int {
	limit, err := strconv.ParseInt(os.Getenv(envMemory), 10, 64)
	if err != nil || limit <= 0 {
		fmt.Fprintln(os.Stderr, "no memory limit given")
		return 1
	}
	boundMemory(limit)
	if parent, err := strconv.Atoi(os.Getenv(envParent)); err == nil {
		go watchParent(parent)
	}
	enc, dec := json.NewEncoder(out), json.NewDecoder(in)
	var req request
	if err := dec.Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "reading the request:", err)
		return 1
	}
	if err := enc.Encode(childMessage{Started: true}); err != nil {
		fmt.Fprintln(os.Stderr, "writing to the parent:", err)
		return 1
	}
	if err := enc.Encode(render(&req, enc, dec)); err != nil {
		fmt.Fprintln(os.Stderr, "writing the result:", err)
		return 1
	}
	return 0
}

// render renders the chart of req.
func render(req *request, enc *json.Encoder, dec *json.Decoder) childMessage {
	ch, err := req.Chart.chart()
	if err != nil {
		return childMessage{Error: err.Error()}
	}
	decoded, err := req.Values.decode()
	if err != nil {
		return childMessage{Error: err.Error()}
	}
	values, _ := decoded.(map[string]any)
	if values == nil {
		values = map[string]any{}
	}
	if err := chartutil.ProcessDependencies(ch, values); err != nil {
		return childMessage{Error: err.Error()}
	}
	top, err := util.ToRenderValuesWithSchemaValidation(ch, values, req.Release, req.Capabilities, true)
	if err != nil {
		return childMessage{Error: err.Error()}
	}
	var e engine.Engine
	if req.Lookup {
		e.CustomTemplateFuncs = map[string]any{"lookup": lookupThroughParent(enc, dec)}
	}
	files, err := e.Render(ch, top)
	if err != nil {
		return childMessage{Error: err.Error()}
	}
	var size int64
	for name, data := range files {
		size += int64(len(name) + len(data))
	}
	if size > req.Output {
		return childMessage{Error: "the rendered manifests are too large", OutputExceeded: true}
	}
	return childMessage{Rendered: files}
}

// lookupThroughParent returns a lookup template function that asks the
// parent.
func lookupThroughParent(enc *json.Encoder, dec *json.Decoder) func(apiVersion, kind, namespace, name string) (map[string]any, error) {
	return func(apiVersion, kind, namespace, name string) (map[string]any, error) {
		call := &lookupCall{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name}
		if err := enc.Encode(childMessage{Lookup: call}); err != nil {
			return nil, err
		}
		var reply lookupReply
		if err := dec.Decode(&reply); err != nil {
			return nil, err
		}
		if reply.Error != "" {
			return map[string]any{}, errors.New(reply.Error)
		}
		obj := map[string]any{}
		// As client-go decodes objects: integers stay int64.
		if err := apijson.Unmarshal(reply.Object, &obj); err != nil {
			return nil, err
		}
		return obj, nil
	}
}

// boundMemory keeps the child within limit bytes: the collector works
// harder as it nears it, the child exits when it is passed, and the
// address space is capped a little above it so that one huge allocation
// fails at once. The kernel's OOM killer, if the container runs short
// anyway, takes the child first.
func boundMemory(limit int64) {
	debug.SetMemoryLimit(limit * 3 / 4)
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	if size := addressSpace(); capAddressSpace && size > 0 {
		capped := uint64(size + limit + 64<<20)
		_ = syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: capped, Max: capped})
	}
	go watchMemory(uint64(limit))
}

// watchMemory ends the child once the memory it holds passes limit.
func watchMemory(limit uint64) {
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	for range time.Tick(2 * time.Millisecond) {
		metrics.Read(samples)
		if samples[0].Value.Uint64()-samples[1].Value.Uint64() > limit {
			fmt.Fprintln(os.Stderr, "the render went past its memory limit")
			os.Exit(exitMemory)
		}
	}
}

// watchParent ends the child once its parent is no longer ppid (it was
// killed before it could end the child, or was gone before the child
// looked): a render must not outlive the process that waits for it.
func watchParent(ppid int) {
	if os.Getppid() != ppid {
		os.Exit(1)
	}
	for range time.Tick(100 * time.Millisecond) {
		if os.Getppid() != ppid {
			os.Exit(1)
		}
	}
}

// addressSpace returns the size of the child's address space now, in
// bytes, or 0 when it cannot be read.
func addressSpace() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
