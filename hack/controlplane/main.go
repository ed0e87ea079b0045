// Command controlplane builds the local control plane (etcd, kube-apiserver
// and kube-controller-manager) from Go modules, once, into the cache folder,
// and prints that folder; envtest finds the binaries there through
// KUBEBUILDER_ASSETS. hack/controlplane.sh runs it.
//
//	controlplane          build what is missing, print the folder
//	controlplane --print  print the folder only
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/windlass-dev/windlass/internal/controlplane"
)

func main() {
	printOnly := flag.Bool("print", false, "print the folder only; build nothing")
	flag.Parse()
	dir, err := controlplane.AssetsDir()
	if err == nil && !*printOnly {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = controlplane.Build(ctx, dir, controlplane.LineProgress(os.Stderr, "controlplane: "))
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
	fmt.Println(dir)
}
