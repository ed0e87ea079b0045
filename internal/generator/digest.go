package generator

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// TreeDigest returns the sha256 of the tree under dir, as hex: of every
// folder's and regular file's path, of whether a file is executable, and of
// its bytes, in the order of a walk (lexical). Two trees with the same
// files have the same digest, whenever and wherever they were built.
func TreeDigest(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			fmt.Fprintf(h, "d %s\x00", rel)
		case d.Type().IsRegular():
			return hashFile(h, p, rel)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashFile writes the file at p, named rel, to h.
func hashFile(h io.Writer, p, rel string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	kind := "f"
	if fi.Mode()&0o111 != 0 {
		kind = "x"
	}
	fmt.Fprintf(h, "%s %s %d\x00", kind, rel, fi.Size())
	_, err = io.Copy(h, f)
	return err
}
