package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	apijson "k8s.io/apimachinery/pkg/util/json"

	"github.com/windlass-dev/windlass/internal/isolate"
)

// childRole names the render process to isolate.Serve.
const childRole = "helm-render"

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
	isolate.Serve(childRole, runChild)
}

// runChild is the whole life of a child: it renders what it reads from in
// and writes the outcome to out.
func runChild(in io.Reader, out io.Writer) int {
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
