package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/windlass-dev/windlass/internal/shard"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// appliedPrefix starts the names of the ConfigMaps that the story's
// Kustomizations apply: cm-<the Kustomization's name>, in its namespace.
const appliedPrefix = "cm-"

// auditApplies returns the options of a control plane that logs, to the
// returned file, every write (a dry run too) of a ConfigMap by the users
// replicas: the story's applies, each with the user that sent it and when
// the API server received it.
func auditApplies(t *testing.T, g *WithT, replicas []string) ([]testenv.Option, string) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	g.Expect(os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: [`+strings.Join(replicas, ", ")+`]
  verbs: [create, update, patch, delete]
  resources: [{group: "", resources: [configmaps]}]
- level: None
`), 0o600)).To(Succeed())
	log := filepath.Join(dir, "audit.log")
	return []testenv.Option{
		testenv.WithAPIServerFlag("audit-policy-file", policy),
		testenv.WithAPIServerFlag("audit-log-path", log),
		testenv.WithAPIServerFlag("audit-log-format", "json"),
		testenv.WithAPIServerFlag("audit-log-mode", "blocking"),
	}, log
}

// expectAppliedOnlyByHolders reads the audit log at path (see
// auditApplies) and checks that every write of a ConfigMap that a
// Kustomization of the story applies came from the replica that held the
// Kustomization's bucket when the API server received it, as the buckets'
// Leases say (history): no replica applied an object that another held,
// so no object was applied by two replicas at once. It logs how many
// objects more than one replica wrote, one after the other.
func expectAppliedOnlyByHolders(t *testing.T, g *WithT, path string, history *bucketHistory) {
	f, err := os.Open(path)
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	writers := map[string]map[string]bool{}
	writes := 0
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for scanner.Scan() {
		var w auditv1.Event
		g.Expect(json.Unmarshal(scanner.Bytes(), &w)).To(Succeed(), scanner.Text())
		if w.ObjectRef == nil || w.ObjectRef.Resource != "configmaps" {
			continue
		}
		owner, ok := strings.CutPrefix(w.ObjectRef.Name, appliedPrefix)
		if !ok {
			continue
		}
		writes++
		b := shard.BucketOf(shard.Key(&metav1.ObjectMeta{Namespace: w.ObjectRef.Namespace, Name: owner}, shard.ByObject))
		g.Expect(history.holderAt(b, w.RequestReceivedTimestamp.Time)).To(Equal(w.User.Username),
			"%s of ConfigMap %s/%s by %s at %s: the Kustomization's bucket %d was held by another",
			w.Verb, w.ObjectRef.Namespace, w.ObjectRef.Name, w.User.Username, w.RequestReceivedTimestamp.Format(time.RFC3339Nano), b)
		key := w.ObjectRef.Namespace + "/" + w.ObjectRef.Name
		if writers[key] == nil {
			writers[key] = map[string]bool{}
		}
		writers[key][w.User.Username] = true
	}
	g.Expect(scanner.Err()).NotTo(HaveOccurred())
	g.Expect(writes).To(BeNumerically(">=", shardNamespaces*shardKustomizations), "every applied ConfigMap's writes are in the log")
	several := 0
	for _, by := range writers {
		if len(by) > 1 {
			several++
		}
	}
	t.Logf("the audit log holds %d writes of %d applied ConfigMaps, each by the holder of its Kustomization; %d written by more than one replica in turn",
		writes, len(writers), several)
}
