package git

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
)

func TestClone_SparseCheckout(t *testing.T) {
	r := newLocalRepo(t, "main")
	r.commit("main", map[string]string{
		"root.txt":      "root",
		"a/x.yaml":      "x",
		"ab/y.yaml":     "y",
		"b/c/z.yaml":    "z",
		"b/c/d/w.yaml":  "w",
		"b/other.yaml":  "o",
		"b/cd/no.yaml":  "no",
		"deep/a/b.yaml": "b",
	}, "tree")
	all := []string{"a/x.yaml", "ab/y.yaml", "b/c/d/w.yaml", "b/c/z.yaml", "b/cd/no.yaml", "b/other.yaml",
		"deep/a/b.yaml", "root.txt"}
	tests := []struct {
		name    string
		dirs    []string
		shallow bool
		want    []string
	}{
		{name: "no sparse directories", dirs: nil, want: all},
		{name: "one directory", dirs: []string{"a"}, want: []string{"a/x.yaml"}},
		{name: "nested directory, no prefix siblings", dirs: []string{"b/c"},
			want: []string{"b/c/d/w.yaml", "b/c/z.yaml"}},
		{name: "several directories, shallow", dirs: []string{"a", "deep/a"}, shallow: true,
			want: []string{"a/x.yaml", "deep/a/b.yaml"}},
		{name: "trailing slash and ./ are cleaned", dirs: []string{"./a/"}, want: []string{"a/x.yaml"}},
		{name: "root means everything", dirs: []string{"."}, want: all},
		{name: "missing directory gives an empty tree", dirs: []string{"missing"}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, dir := newTestClient(t, nil, nil)
			_, err := c.Clone(context.Background(), r.url(), CheckoutOptions{
				Branch: "main", ShallowClone: tt.shallow, SparseCheckoutDirectories: tt.dirs,
			})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(listFiles(t, dir)).To(Equal(tt.want))
		})
	}
}

func TestCleanSparseDirs(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    []string
		wantErr string
	}{
		{name: "nil", in: nil, want: nil},
		{name: "clean", in: []string{"a/b/", "./c", "d//e"}, want: []string{"a/b", "c", "d/e"}},
		{name: "dot dot", in: []string{"a/../b"}, wantErr: ".."},
		{name: "leading dot dot", in: []string{"../x"}, wantErr: ".."},
		{name: "absolute", in: []string{"/a"}, wantErr: "relative"},
		{name: "backslash", in: []string{`a\..\..\b`}, wantErr: "forward slashes"},
		{name: "git dir", in: []string{".git"}, wantErr: ".git"},
		{name: "root", in: []string{"a", "."}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := cleanSparseDirs(tt.in)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
