package manager

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

// TestQuietWarnings: the API server's finalizer-name warning is logged at
// debug level only; other warnings still at info level; a handler of the
// caller's own is kept.
func TestQuietWarnings(t *testing.T) {
	finalizer := `metadata.finalizers: "finalizers.fluxcd.io": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers`
	for _, tt := range []struct {
		name      string
		verbosity int
		message   string
		logged    int
	}{
		{"the finalizer warning at info level", 0, finalizer, 0},
		{"the finalizer warning at debug level", 1, finalizer, 1},
		{"another warning at info level", 0, "v1beta1 is deprecated", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var lines []string
			log := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: tt.verbosity})
			ctx := logr.NewContext(context.Background(), log)
			withQuietWarnings(&rest.Config{}).WarningHandlerWithContext.HandleWarningHeaderWithContext(ctx, 299, "", tt.message)
			g.Expect(lines).To(HaveLen(tt.logged))
		})
	}
	t.Run("a handler of the caller's own", func(t *testing.T) {
		g := NewWithT(t)
		cfg := &rest.Config{WarningHandler: rest.NoWarnings{}}
		g.Expect(withQuietWarnings(cfg)).To(BeIdenticalTo(cfg))
	})
}
