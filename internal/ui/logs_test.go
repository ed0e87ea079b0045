package ui

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// TestLogsKeepTheLinesAboutObjects: the tee writes every line to the
// logger it wraps, with the caller's file and line, and keeps the lines of
// a reconciler's logger (which names its object), at the levels written,
// errors with their error, bounded in count and size.
func TestLogsKeepTheLinesAboutObjects(t *testing.T) {
	g := NewWithT(t)
	var written []string
	base := funcr.New(func(prefix, args string) { written = append(written, args) }, funcr.Options{LogCaller: funcr.All})
	logs := NewLogs(3)
	log := logr.New(logs.Tee(base.GetSink()))

	log.Info("Starting the manager")
	reconciler := log.WithName("kustomization").WithValues("controller", "kustomization", "controllerKind", "Kustomization",
		"Kustomization", map[string]string{"name": "app", "namespace": "team-a"}, "namespace", "team-a", "name", "app", "reconcileID", "42")
	reconciler.Info("Applied the revision", "revision", "main@sha1:1111")
	reconciler.V(1).Info("Not written at the info level")
	reconciler.Error(errors.New("kustomize build failed"), "Reconciling failed", "message", strings.Repeat("x", 2*maxLogFields))

	g.Expect(written).To(HaveLen(3), "the disabled line is neither written nor kept")
	g.Expect(written[0]).To(ContainSubstring(`"file"="logs_test.go"`), "the caller is the line that logged, not the tee")
	got := logs.about("Kustomization", "team-a", "app", 10)
	g.Expect(got).To(HaveLen(2))
	g.Expect(got[0].Level).To(Equal("error"))
	g.Expect(got[0].Message).To(Equal("Reconciling failed"))
	g.Expect(got[0].Fields).To(HavePrefix("error=kustomize build failed message=xxx"))
	g.Expect(len(got[0].Fields)).To(BeNumerically("<=", maxLogFields+len("…")))
	g.Expect(got[1]).To(And(HaveField("Level", "info"), HaveField("Message", "Applied the revision"),
		HaveField("Fields", "revision=main@sha1:1111")))
	g.Expect(logs.about("Kustomization", "team-b", "app", 10)).To(BeEmpty())

	for i := range 5 {
		reconciler.Info(fmt.Sprint("line ", i))
	}
	got = logs.about("Kustomization", "team-a", "app", 10)
	g.Expect(got).To(HaveLen(3), "the ring keeps its size")
	g.Expect(got[0].Message).To(Equal("line 4"))
}

// TestObjectPageShowsItsLogs: an object's page lists the controllers'
// lines about it; a UI apart from the controllers says where logs are.
func TestObjectPageShowsItsLogs(t *testing.T) {
	g := NewWithT(t)
	logs := NewLogs(10)
	g.Expect(logs.Tee(logr.Discard().GetSink())).To(BeNil(), "what discards keeps nothing")
	log := logr.New(logs.Tee(funcr.New(func(string, string) {}, funcr.Options{}).GetSink()))
	log.WithValues("controllerKind", "Kustomization", "namespace", "team-a", "name", "app").
		Info("Applied the revision", "revision", "main@sha1:<b>")
	log.WithValues("controllerKind", "Kustomization", "namespace", "team-b", "name", "db").Info("Another object's line")
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(testObjects()...).Build()
	h := (&Server{Reader: c, Kinds: kinds.All, Log: logr.Discard(), Logs: logs}).Handler()

	_, body := get(g, h, "/object/Kustomization/team-a/app")
	lines := section(body, "logs")
	g.Expect(lines).To(ContainSubstring(`<td class="message">Applied the revision</td><td class="message muted">revision=main@sha1:&lt;b&gt;</td>`))
	g.Expect(lines).NotTo(ContainSubstring("Another object"))

	_, body = get(g, testServer(testObjects()...), "/object/Kustomization/team-a/app")
	g.Expect(body).To(ContainSubstring("so it keeps no logs"))
}
