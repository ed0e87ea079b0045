package release

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/kube"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/internal/testutil/helmtest"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		getter  bool
		storage string
		wantErr string
	}{
		{name: "a renderer without a cluster", getter: false, storage: ""},
		{name: "a cluster and a storage namespace", getter: true, storage: "flux-system"},
		{name: "a cluster without a storage namespace", getter: true, storage: "", wantErr: "no storage namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var gt *Getter
			if tt.getter {
				gt = getter(t)
			}
			r, err := New(gt, tt.storage, WithLogHandler(nil))
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.log).NotTo(BeNil())
			if !tt.getter {
				_, err := r.Last("app")
				g.Expect(err).To(MatchError(errNoCluster))
				_, err = r.Install(context.Background(), basicChart(t, "1.0.0"), nil, InstallOptions{ReleaseName: "app", Namespace: "x"})
				g.Expect(err).To(MatchError(errNoCluster))
			}
		})
	}
}

func TestCopyChart(t *testing.T) {
	sub := helmtest.Chart(t, "sub", "0.1.0", helmtest.WithValues(map[string]any{"exports": map[string]any{"data": map[string]any{"from": "sub"}}}))
	parent := helmtest.Chart(t, "parent", "1.0.0",
		helmtest.WithValues(map[string]any{"greeting": "hello", "nested": map[string]any{"list": []any{"a"}}}),
		helmtest.WithSubchart(sub),
		helmtest.WithMetadata(func(md *chart.Metadata) {
			md.Dependencies[0].Condition = "sub.enabled"
			md.Dependencies[0].ImportValues = []any{"data"}
		}))
	tests := []struct {
		name   string
		values map[string]any
	}{
		{name: "a disabled subchart", values: map[string]any{"sub": map[string]any{"enabled": false}}},
		{name: "an enabled subchart with imported values", values: map[string]any{"sub": map[string]any{"enabled": true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cp := copyChart(parent)
			// What the SDK does to the chart it is given.
			g.Expect(chartutil.ProcessDependencies(cp, tt.values)).To(Succeed())
			cp.Values["greeting"] = "changed"
			cp.Values["nested"].(map[string]any)["list"].([]any)[0] = "changed"

			g.Expect(parent.Dependencies()).To(HaveLen(1))
			g.Expect(parent.Dependencies()[0].Parent()).To(BeIdenticalTo(parent))
			g.Expect(parent.Metadata.Dependencies[0].Enabled).To(BeFalse())
			g.Expect(parent.Metadata.Dependencies[0].ImportValues).To(Equal([]any{"data"}))
			g.Expect(parent.Values).To(Equal(map[string]any{"greeting": "hello", "nested": map[string]any{"list": []any{"a"}}}))
			for _, d := range cp.Dependencies() {
				g.Expect(d.Parent()).To(BeIdenticalTo(cp))
			}
		})
	}
	NewWithT(t).Expect(copyChart(nil)).To(BeNil())
}

func TestResolveSSA(t *testing.T) {
	tests := []struct {
		mode, applyMethod string
		want              bool
		wantErr           bool
	}{
		{mode: SSAEnabled, applyMethod: "csa", want: true},
		{mode: SSADisabled, applyMethod: "ssa", want: false},
		{mode: SSAAuto, applyMethod: "ssa", want: true},
		{mode: SSAAuto, applyMethod: "csa", want: false},
		{mode: "", applyMethod: "", want: false},
		{mode: "true", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.mode+"/"+tt.applyMethod, func(t *testing.T) {
			g := NewWithT(t)
			got, err := resolveSSA(tt.mode, tt.applyMethod)
			if tt.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
			g.Expect(ssaFlag(got)).To(Equal(map[bool]string{true: "true", false: "false"}[tt.want]))
		})
	}
}

func TestWaitStrategy(t *testing.T) {
	tests := []struct {
		wait     bool
		strategy kube.WaitStrategy
		want     kube.WaitStrategy
	}{
		{wait: false, strategy: kube.LegacyStrategy, want: kube.HookOnlyStrategy},
		{wait: true, want: kube.StatusWatcherStrategy},
		{wait: true, strategy: kube.LegacyStrategy, want: kube.LegacyStrategy},
	}
	for _, tt := range tests {
		NewWithT(t).Expect(waitStrategy(tt.wait, tt.strategy)).To(Equal(tt.want))
	}
}

func TestPolicies(t *testing.T) {
	g := NewWithT(t)
	for _, tt := range []struct{ in, def, want string }{
		{"", helmv2.CRDsCreate, helmv2.CRDsCreate},
		{"", helmv2.CRDsSkip, helmv2.CRDsSkip},
		{helmv2.CRDsCreateReplace, helmv2.CRDsSkip, helmv2.CRDsCreateReplace},
	} {
		got, err := crdPolicy(tt.in, tt.def)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(tt.want))
	}
	_, err := crdPolicy("create", helmv2.CRDsSkip)
	g.Expect(err).To(HaveOccurred())

	for in, want := range map[string]action.PostRenderStrategy{
		"": action.PostRenderStrategyCombined, "combined": action.PostRenderStrategyCombined,
		"nohooks": action.PostRenderStrategyNoHooks, "separate": action.PostRenderStrategySeparate,
	} {
		got, err := postRenderStrategy(in)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(want))
	}
	_, err = postRenderStrategy("sometimes")
	g.Expect(err).To(HaveOccurred())

	g.Expect(timeoutOrDefault(0)).To(Equal(DefaultTimeout))
	g.Expect(timeoutOrDefault(time.Second)).To(Equal(time.Second))
}

func TestGuard(t *testing.T) {
	g := NewWithT(t)
	_, err := guard("rendering", func() (int, error) { panic("template exploded") })
	g.Expect(err).To(MatchError(ContainSubstring("rendering: the Helm SDK panicked: template exploded")))
	v, err := guard("rendering", func() (int, error) { return 7, errors.New("plain") })
	g.Expect(v).To(Equal(7))
	g.Expect(err).To(MatchError("plain"))
}

func TestActionContextEndsAtTimeout(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel, err := actionContext(context.Background(), 50*time.Millisecond)
	g.Expect(err).NotTo(HaveOccurred())
	defer cancel()
	g.Eventually(ctx.Done()).Should(BeClosed())

	ended, stop := context.WithCancel(context.Background())
	stop()
	_, _, err = actionContext(ended, time.Minute)
	g.Expect(err).To(MatchError(context.Canceled))
}
