// Command image builds the Windlass container image from windlass binaries
// built beforehand (`make image` builds them and runs it): it writes an OCI
// image layout folder, or pushes the image to a registry with -push. It is
// a program of its own rather than a windlass subcommand, so that the
// windlass binary does not carry the registry client.
//
//	go run ./hack/image -platform linux/amd64=bin/windlass-linux-amd64 -out bin/image -version v0.1.0
//	go run ./hack/image -platform linux/amd64=bin/windlass-linux-amd64 -push ghcr.io/me/windlass:v0.1.0
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/windlass-dev/windlass/internal/containerimage"
)

// platforms is the repeatable -platform flag.
type platforms []containerimage.Platform

func (p *platforms) String() string {
	parts := make([]string, 0, len(*p))
	for _, pl := range *p {
		parts = append(parts, pl.String()+"="+pl.Binary)
	}
	return strings.Join(parts, ",")
}

func (p *platforms) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		pl, err := containerimage.ParsePlatform(strings.TrimSpace(part))
		if err != nil {
			return err
		}
		*p = append(*p, pl)
	}
	return nil
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	var ps platforms
	opts := containerimage.Options{}
	fs.Var(&ps, "platform", "os/arch=binary, repeatable or comma-separated: a platform and the windlass binary built for it")
	out := fs.String("out", "bin/image", "the OCI image layout folder to write")
	push := fs.String("push", "", "push to this reference (registry/repository:tag) instead of writing -out")
	fs.StringVar(&opts.CACertificates, "ca-certificates", containerimage.DefaultCACertificates, "the PEM bundle of CA certificates to put in the image")
	fs.StringVar(&opts.Version, "version", "dev", "the version label, and the tag in the layout")
	fs.StringVar(&opts.Revision, "revision", "", "the revision label (the commit)")
	fs.StringVar(&opts.Source, "source", "https://github.com/windlass-dev/windlass", "the source label")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(ps) == 0 {
		return errors.New("no -platform given: pass -platform linux/amd64=path-of-the-binary")
	}
	opts.Platforms = ps
	created, err := sourceDateEpoch()
	if err != nil {
		return err
	}
	opts.Created = created
	idx, err := containerimage.Build(opts)
	if err != nil {
		return err
	}
	if *push != "" {
		ref, err := containerimage.Push(context.Background(), *push, idx)
		if err != nil {
			return err
		}
		fmt.Printf("pushed %s (%s)\n", ref, ps.String())
		return nil
	}
	if err := containerimage.WriteLayout(*out, opts.Version, idx); err != nil {
		return err
	}
	fmt.Printf("wrote the OCI image layout %s (%s)\n", *out, ps.String())
	return nil
}

// sourceDateEpoch returns the time in $SOURCE_DATE_EPOCH, or the zero time
// (the image package then uses the Unix epoch).
func sourceDateEpoch() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Time{}, nil
	}
	secs, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid SOURCE_DATE_EPOCH %q: give seconds since 1970", v)
	}
	return time.Unix(secs, 0), nil
}
