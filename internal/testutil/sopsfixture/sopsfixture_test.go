package sopsfixture

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestEncryptYAMLHidesOnlyTheData(t *testing.T) {
	g := NewWithT(t)
	key, err := NewAgeKey()
	g.Expect(err).NotTo(HaveOccurred())
	out, err := EncryptYAML([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: hunter2\n"), key.Recipient())
	g.Expect(err).NotTo(HaveOccurred())
	s := string(out)
	g.Expect(s).NotTo(ContainSubstring("hunter2"))
	g.Expect(s).To(ContainSubstring("name: db"))
	g.Expect(s).To(ContainSubstring("ENC[AES256_GCM"))
	g.Expect(strings.Count(s, key.Recipient())).To(Equal(1))
}
