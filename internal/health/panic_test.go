package health

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/parallel"
)

// panickyReader panics, as a bug on an unusual object would, when it reads
// the object named "bomb". It counts the reads.
type panickyReader struct {
	client.Reader
	reads atomic.Int32
}

func (r *panickyReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.reads.Add(1)
	if key.Name == "bomb" {
		var m map[string]int
		m["x"] = 1
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

func TestCheckFailsOnAPanic(t *testing.T) {
	ns := env.CreateNamespace(t)
	ref := func(name string) ObjectRef {
		return ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name}
	}
	for _, tt := range []struct {
		name string
		refs []ObjectRef
	}{
		{name: "one object, checked on the calling goroutine", refs: []ObjectRef{ref("bomb")}},
		{name: "among others, checked at the same time", refs: []ObjectRef{ref("a"), ref("bomb"), ref("c")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			reader := &panickyReader{Reader: env.Client}
			checker := NewChecker(reader, mapper)

			res, err := checker.Check(context.Background(), tt.refs)

			g.Expect(res).To(BeNil())
			g.Expect(err).To(MatchError("ConfigMap/" + ns + "/bomb: checking its health: panicked: assignment to entry in nil map"))
			var p *parallel.PanicError
			g.Expect(errors.As(err, &p)).To(BeTrue())
			g.Expect(reader.reads.Load()).To(BeEquivalentTo(len(tt.refs)), "every object was read")
		})
	}
}
