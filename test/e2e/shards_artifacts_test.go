package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// sharedArtifactsAddr is the address the sharding story's replicas share
// in their artifacts' URLs, as the install's Service: no replica listens
// on it, each downloads from the replica that holds the source, at the
// address that replica's Lease publishes.
const sharedArtifactsAddr = "source-controller.windlass-system.svc"

// expectSharedArtifactURLs checks that every GitRepository's artifact URL
// names the replicas' shared address.
func expectSharedArtifactURLs(g *WithT, cp *testenv.Environment) {
	var repos sourcev1.GitRepositoryList
	g.Expect(cp.Client.List(context.Background(), &repos)).To(Succeed())
	g.Expect(repos.Items).NotTo(BeEmpty())
	for _, repo := range repos.Items {
		g.Expect(repo.Status.Artifact).NotTo(BeNil(), "%s has an artifact", repo.Name)
		g.Expect(repo.Status.Artifact.URL).To(HavePrefix("http://"+sharedArtifactsAddr+"/"), "%s/%s", repo.Namespace, repo.Name)
	}
}

// gitRepositoryVersions returns the resourceVersion of every GitRepository,
// by namespace/name.
func gitRepositoryVersions(g *WithT, cp *testenv.Environment) map[string]string {
	var repos sourcev1.GitRepositoryList
	g.Expect(cp.Client.List(context.Background(), &repos)).To(Succeed())
	out := make(map[string]string, len(repos.Items))
	for _, repo := range repos.Items {
		out[client.ObjectKeyFromObject(&repo).String()] = repo.ResourceVersion
	}
	return out
}

// expectArtifactsFromEveryReplica checks that every replica serves the
// artifact of every GitRepository, with the digest its status names: a
// replica that does not hold the source passes the download to the one
// that does, as a Service would send it to any of them.
func expectArtifactsFromEveryReplica(g *WithT, cp *testenv.Environment, replicas map[string]*controller) {
	var repos sourcev1.GitRepositoryList
	g.Expect(cp.Client.List(context.Background(), &repos)).To(Succeed())
	for _, repo := range repos.Items {
		a := repo.Status.Artifact
		g.Expect(a).NotTo(BeNil())
		for name, proc := range replicas {
			g.Eventually(func(g Gomega) {
				resp, err := http.Get("http://" + proc.StorageAddr + "/" + a.Path)
				g.Expect(err).NotTo(HaveOccurred())
				defer resp.Body.Close()
				g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "%s serves %s", name, a.Path)
				body, err := io.ReadAll(resp.Body)
				g.Expect(err).NotTo(HaveOccurred())
				sum := sha256.Sum256(body)
				g.Expect("sha256:"+hex.EncodeToString(sum[:])).To(Equal(a.Digest), "%s serves %s whole", name, a.Path)
			}, timeout, interval).Should(Succeed())
		}
	}
}
