package sops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestDecryptKustomizeSources(t *testing.T) {
	key, other := newAgeKey(t), newAgeKey(t)
	pgpKey := newPGPKey(t)
	mine := encryptOptions{groups: group(key.masterKey(t), pgpKey.masterKey())}

	root := t.TempDir()
	writeFile(t, root, "apps/base/kustomization.yaml", []byte(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
secretGenerator:
- name: app
  files:
  - secret.yaml
  - config.JSON
  - settings.ini
  - tls.crt=certs/tls.crt
  - linked.env
  envs:
  - app.env
- name: legacy
  env: legacy.env
- name: plain
  files:
  - plain.txt
  - missing.txt
`))
	writeFile(t, root, "apps/base/secret.yaml", encrypt(t, plainYAML, FormatYAML, mine))
	writeFile(t, root, "apps/base/config.JSON", encrypt(t, plainJSON, FormatJSON, mine))
	writeFile(t, root, "apps/base/settings.ini", encrypt(t, plainINI, FormatINI, mine))
	writeFile(t, root, "apps/base/certs/tls.crt", encrypt(t, plainBinary, FormatBinary, mine))
	writeFile(t, root, "apps/base/app.env", encrypt(t, plainDotenv, FormatDotenv, mine))
	writeFile(t, root, "apps/base/legacy.env", encrypt(t, plainDotenv, FormatDotenv, mine))
	writeFile(t, root, "shared/real.env", encrypt(t, plainDotenv, FormatDotenv, mine))
	NewWithT(t).Expect(os.Symlink("../../shared/real.env", filepath.Join(root, "apps/base/linked.env"))).To(Succeed())
	writeFile(t, root, "apps/base/plain.txt", []byte("not encrypted\n"))

	writeFile(t, root, "apps/prod/Kustomization", []byte(`resources:
- ../base
- deployment.yaml
- https://github.com/example/repo//deploy?ref=v1
- github.com/example/repo/deploy
components:
- ../../components/extra
`))
	writeFile(t, root, "apps/prod/deployment.yaml", []byte("kind: Deployment\n"))
	writeFile(t, root, "components/extra/kustomization.yml", []byte(`kind: Component
secretGenerator:
- name: extra
  files:
  - extra.yaml
`))
	writeFile(t, root, "components/extra/extra.yaml", encrypt(t, plainYAML, FormatYAML, mine))

	// Outside the kustomization graph, encrypted for another key: it must
	// not be visited, or it would fail the build.
	writeFile(t, root, "clusters/other/kustomization.yaml", []byte("secretGenerator:\n- name: o\n  envs: [other.env]\n"))
	otherEnv := encrypt(t, plainDotenv, FormatDotenv, encryptOptions{groups: group(other.masterKey(t))})
	writeFile(t, root, "clusters/other/other.env", otherEnv)

	for _, entries := range []map[string][]byte{
		{"age.agekey": key.secret()},
		{"pgp.asc": pgpKey.secret(t)},
	} {
		g := NewWithT(t)
		tree := t.TempDir()
		g.Expect(os.CopyFS(tree, os.DirFS(root))).To(Succeed())
		g.Expect(os.Remove(filepath.Join(tree, "apps/base/linked.env"))).To(Succeed())
		g.Expect(os.Symlink("../../shared/real.env", filepath.Join(tree, "apps/base/linked.env"))).To(Succeed())

		d := newTestDecryptor(t, entries)
		out, err := d.DecryptKustomizeSources(tree, "./apps/prod", nil)
		g.Expect(err).ToNot(HaveOccurred())

		realTree, err := filepath.EvalSymlinks(tree)
		g.Expect(err).ToNot(HaveOccurred())
		read := func(name string) []byte {
			if b, ok := out[filepath.Join(realTree, name)]; ok {
				return b
			}
			b, err := os.ReadFile(filepath.Join(tree, name))
			g.Expect(err).ToNot(HaveOccurred())
			return b
		}
		expectSamePlaintext(g, FormatYAML, read("apps/base/secret.yaml"))
		expectSamePlaintext(g, FormatJSON, read("apps/base/config.JSON"))
		expectSamePlaintext(g, FormatINI, read("apps/base/settings.ini"))
		expectSamePlaintext(g, FormatBinary, read("apps/base/certs/tls.crt"))
		expectSamePlaintext(g, FormatDotenv, read("apps/base/app.env"))
		expectSamePlaintext(g, FormatDotenv, read("apps/base/legacy.env"))
		expectSamePlaintext(g, FormatDotenv, read("shared/real.env"))
		expectSamePlaintext(g, FormatYAML, read("components/extra/extra.yaml"))
		g.Expect(string(read("apps/base/plain.txt"))).To(Equal("not encrypted\n"))
		g.Expect(read("clusters/other/other.env")).To(Equal(otherEnv))

		fi, err := os.Lstat(filepath.Join(tree, "apps/base/linked.env"))
		g.Expect(err).ToNot(HaveOccurred())
		g.Expect(fi.Mode()&os.ModeSymlink).ToNot(BeZero(), "the symlink itself is kept")

		// Nothing was written: the source still holds the ciphertext, and a
		// second run, with an absolute directory, decrypts the same.
		encrypted, err := os.ReadFile(filepath.Join(tree, "apps/base/app.env"))
		g.Expect(err).ToNot(HaveOccurred())
		g.Expect(string(encrypted)).To(ContainSubstring("ENC[AES256_GCM,"))
		again, err := d.DecryptKustomizeSources(tree, filepath.Join(tree, "apps/prod"), nil)
		g.Expect(err).ToNot(HaveOccurred())
		g.Expect(again).To(Equal(out))

		// With the overlay as the root, its base is out of bounds.
		_, err = d.DecryptKustomizeSources(filepath.Join(tree, "apps/prod"), ".", nil)
		g.Expect(err).To(MatchError(ErrPathEscapesRoot))
	}
}

func TestDecryptKustomizeSources_Refused(t *testing.T) {
	key, other := newAgeKey(t), newAgeKey(t)
	d := newTestDecryptor(t, map[string][]byte{"age.agekey": key.secret()})
	encEnv := encrypt(t, plainDotenv, FormatDotenv, encryptOptions{groups: group(key.masterKey(t))})

	outside := t.TempDir()
	writeFile(t, outside, "stolen.env", encEnv)

	tests := []struct {
		name   string
		setup  func(t *testing.T, root string) // files besides app/kustomization.yaml
		kfile  string                          // content of app/kustomization.yaml
		dir    string
		want   error
		detail string
	}{
		{
			name:  "parent reference out of the root",
			kfile: "secretGenerator:\n- name: s\n  envs: [../../stolen.env]\n",
			want:  ErrPathEscapesRoot, detail: `app/kustomization.yaml: secretGenerator file "../../stolen.env"`,
		},
		{
			name:  "absolute reference",
			kfile: "secretGenerator:\n- name: s\n  files: [" + filepath.Join(outside, "stolen.env") + "]\n",
			want:  ErrPathEscapesRoot, detail: "absolute path",
		},
		{
			name:  "key=absolute reference",
			kfile: "secretGenerator:\n- name: s\n  files: [k=/etc/passwd]\n",
			want:  ErrPathEscapesRoot, detail: "absolute path",
		},
		{
			name: "file symlink out of the root",
			setup: func(t *testing.T, root string) {
				NewWithT(t).Expect(os.Symlink(filepath.Join(outside, "stolen.env"), filepath.Join(root, "app/link.env"))).To(Succeed())
			},
			kfile: "secretGenerator:\n- name: s\n  envs: [link.env]\n",
			want:  ErrPathEscapesRoot, detail: "resolves outside the root through a symlink",
		},
		{
			name: "relative file symlink out of the root",
			setup: func(t *testing.T, root string) {
				rel, err := filepath.Rel(filepath.Join(root, "app"), filepath.Join(outside, "stolen.env"))
				NewWithT(t).Expect(err).ToNot(HaveOccurred())
				NewWithT(t).Expect(os.Symlink(rel, filepath.Join(root, "app/link.env"))).To(Succeed())
			},
			kfile: "secretGenerator:\n- name: s\n  envs: [link.env]\n",
			want:  ErrPathEscapesRoot,
		},
		{
			name: "directory symlink out of the root",
			setup: func(t *testing.T, root string) {
				NewWithT(t).Expect(os.Symlink(outside, filepath.Join(root, "app/ext"))).To(Succeed())
			},
			kfile: "secretGenerator:\n- name: s\n  files: [ext/stolen.env]\n",
			want:  ErrPathEscapesRoot,
		},
		{
			name: "kustomization file symlinked out of the root",
			setup: func(t *testing.T, root string) {
				writeFile(t, outside, "kustomization.yaml", []byte("resources: []\n"))
				NewWithT(t).Expect(os.Symlink(filepath.Join(outside, "kustomization.yaml"),
					filepath.Join(root, "linked/kustomization.yaml"))).To(Succeed())
			},
			kfile: "resources: [../linked]\n",
			want:  ErrPathEscapesRoot,
		},
		{
			name:  "resource out of the root",
			kfile: "resources: [../..]\n",
			want:  ErrPathEscapesRoot, detail: `resource "../.."`,
		},
		{
			name: "file larger than 5 MiB",
			setup: func(t *testing.T, root string) {
				f, err := os.Create(filepath.Join(root, "app/big.env"))
				NewWithT(t).Expect(err).ToNot(HaveOccurred())
				NewWithT(t).Expect(f.Truncate(MaxEncryptedFileSize + 1)).To(Succeed())
				NewWithT(t).Expect(f.Close()).To(Succeed())
			},
			kfile: "secretGenerator:\n- name: s\n  envs: [big.env]\n",
			want:  ErrFileTooLarge,
		},
		{
			name:  "directory as a file",
			setup: func(t *testing.T, root string) { writeFile(t, root, "app/dir/x", nil) },
			kfile: "secretGenerator:\n- name: s\n  files: [dir]\n",
			want:  ErrIrregularFile,
		},
		{
			name: "wrong key",
			setup: func(t *testing.T, root string) {
				writeFile(t, root, "app/app.env", encrypt(t, plainDotenv, FormatDotenv, encryptOptions{groups: group(other.masterKey(t))}))
			},
			kfile: "secretGenerator:\n- name: s\n  envs: [app.env]\n",
			want:  ErrNoMatchingKey, detail: `"app.env": ` + ErrNoMatchingKey.Error() + ": no age identity",
		},
		{
			name: "MAC mismatch",
			setup: func(t *testing.T, root string) {
				tampered := strings.Replace(string(encEnv), "sops_mac=ENC[AES256_GCM,data:", "sops_mac=ENC[AES256_GCM,data:AAAA", 1)
				writeFile(t, root, "app/app.env", []byte(tampered))
			},
			kfile: "secretGenerator:\n- name: s\n  envs: [app.env]\n",
			want:  ErrMACMismatch,
		},
		{
			name:   "invalid kustomization",
			kfile:  "secretGenerator: {\n",
			detail: "app/kustomization.yaml",
		},
		{
			name:  "directory outside the root",
			kfile: "resources: []\n",
			dir:   "../",
			want:  ErrPathEscapesRoot,
		},
		{
			name:  "missing directory",
			kfile: "resources: []\n",
			dir:   "nope",
			want:  os.ErrNotExist,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeFile(t, root, "app/kustomization.yaml", []byte(tt.kfile))
			g.Expect(os.MkdirAll(filepath.Join(root, "linked"), 0o755)).To(Succeed())
			if tt.setup != nil {
				tt.setup(t, root)
			}
			dir := tt.dir
			if dir == "" {
				dir = "app"
			}
			_, err := d.DecryptKustomizeSources(root, dir, nil)
			t.Log(err)
			g.Expect(err).To(HaveOccurred())
			if tt.want != nil {
				g.Expect(err).To(MatchError(tt.want))
			}
			g.Expect(err.Error()).To(ContainSubstring(tt.detail))
			expectNoSecrets(g, err)

			b, rerr := os.ReadFile(filepath.Join(outside, "stolen.env"))
			g.Expect(rerr).ToNot(HaveOccurred())
			g.Expect(b).To(Equal(encEnv), "nothing outside the root is written")
		})
	}
}

func TestDecryptKustomizeSources_AbsoluteDir(t *testing.T) {
	g := NewWithT(t)
	key := newAgeKey(t)
	d := newTestDecryptor(t, map[string][]byte{"age.agekey": key.secret()})
	root := t.TempDir()
	writeFile(t, root, "a/kustomization.yaml", []byte("secretGenerator:\n- name: s\n  envs: [x.env]\n"))
	writeFile(t, root, "a/x.env", encrypt(t, plainDotenv, FormatDotenv, encryptOptions{groups: group(key.masterKey(t))}))

	out, err := d.DecryptKustomizeSources(root, filepath.Join(root, "a"), nil)
	g.Expect(err).ToNot(HaveOccurred())
	realRoot, err := filepath.EvalSymlinks(root)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(out).To(HaveKey(filepath.Join(realRoot, "a/x.env")))
	expectSamePlaintext(g, FormatDotenv, out[filepath.Join(realRoot, "a/x.env")])

	_, err = d.DecryptKustomizeSources(root, t.TempDir(), nil)
	g.Expect(err).To(MatchError(ErrPathEscapesRoot))
}

// TestDecryptKustomizeSources_Generated follows an in-memory kustomization
// (one generated for a directory without any) into the directories it
// lists.
func TestDecryptKustomizeSources_Generated(t *testing.T) {
	g := NewWithT(t)
	key := newAgeKey(t)
	d := newTestDecryptor(t, map[string][]byte{"age.agekey": key.secret()})
	root := t.TempDir()
	writeFile(t, root, "app/sub/kustomization.yaml", []byte("secretGenerator:\n- name: s\n  envs: [x.env]\n"))
	writeFile(t, root, "app/sub/x.env", encrypt(t, plainDotenv, FormatDotenv, encryptOptions{groups: group(key.masterKey(t))}))
	realRoot, err := filepath.EvalSymlinks(root)
	g.Expect(err).ToNot(HaveOccurred())

	generated := map[string][]byte{filepath.Join(realRoot, "app/kustomization.yaml"): []byte("resources: [sub]\n")}
	out, err := d.DecryptKustomizeSources(root, "app", generated)
	g.Expect(err).ToNot(HaveOccurred())
	expectSamePlaintext(g, FormatDotenv, out[filepath.Join(realRoot, "app/sub/x.env")])

	out, err = d.DecryptKustomizeSources(root, "app", nil)
	g.Expect(err).ToNot(HaveOccurred())
	g.Expect(out).To(BeEmpty(), "without the generated kustomization there is nothing to follow")
}
