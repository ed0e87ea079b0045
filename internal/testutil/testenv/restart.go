package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// apiServerRestartTimeout bounds how long StartAPIServer waits for the
// restarted API server to serve the Windlass kinds again.
const apiServerRestartTimeout = 60 * time.Second

// StopAPIServer stops the control plane's kube-apiserver and leaves etcd
// running, so that every client of the control plane finds the API server
// unreachable (connection refused) until StartAPIServer starts it again.
// The server ends its clients' watches as it stops (Start configures
// --shutdown-watch-termination-grace-period), so that it does not wait a
// minute for clients that hold some open.
//
// A test that stops the API server must own its control plane: a shared
// one is also used by the package's other tests, by controllers that
// TestMain started for the whole package, and by parallel tests, which
// would all see the outage. Such a test starts a control plane of its own
// with Start (a few seconds) and stops it when it ends; it must not call
// t.Parallel if it shares one anyway.
func (e *Environment) StopAPIServer() error {
	s := e.env.ControlPlane.GetAPIServer()
	if _, stopped := s.SecureServing.Authn.(*keepCertsAuthn); stopped {
		return errors.New("the API server is already stopped")
	}
	// envtest removes the API server's certificate folder when it stops
	// it, and would issue new serving certificates, from a new CA, when it
	// starts it again: the clients, which trust the old CA, would then
	// refuse the restarted server. Keep the folder's files, to put them
	// back before the restart.
	files, err := readFiles(s.CertDir)
	if err != nil {
		return fmt.Errorf("saving the API server's certificates: %w", err)
	}
	keep := &keepCertsAuthn{
		Authn: s.SecureServing.Authn,
		files: files,
		ca:    bytes.Clone(s.SecureServing.CA),
	}
	// Stop removes the certificate folder even when it fails (when the
	// server had to be killed): StartAPIServer can start it again either way.
	err = s.Stop()
	s.SecureServing.Authn = keep
	if err != nil {
		return fmt.Errorf("stopping the API server: %w", err)
	}
	return nil
}

// StartAPIServer starts the API server that StopAPIServer stopped, on the
// same address, against the same etcd (so with the same objects), with the
// same serving certificate and the same client CA: Config, the users that
// KubeconfigFile issued and the kubeconfigs written for them keep working.
// It returns once the restarted server serves the installed CRDs.
//
// The address is reused: if another process took the port meanwhile (a
// rare race, as with any free port), the restart fails.
func (e *Environment) StartAPIServer() error {
	s := e.env.ControlPlane.GetAPIServer()
	keep, stopped := s.SecureServing.Authn.(*keepCertsAuthn)
	if !stopped {
		return errors.New("the API server is not stopped: call StopAPIServer first")
	}
	addr := net.JoinHostPort(s.SecureServing.Address, s.SecureServing.Port)
	err := s.Start()
	// Start generated a new serving CA before the saved certificates
	// replaced its files; the saved CA is the one the server presents.
	s.SecureServing.CA = keep.ca
	if err != nil {
		return fmt.Errorf("restarting the API server on %s: %w", addr, err)
	}
	s.SecureServing.Authn = keep.Authn
	if got := net.JoinHostPort(s.SecureServing.Address, s.SecureServing.Port); got != addr {
		return fmt.Errorf("the API server restarted on %s, not on %s", got, addr)
	}
	return e.waitCRDsServed(apiServerRestartTimeout)
}

// waitCRDsServed waits until the API server lists the objects of every
// installed CRD, as it does once it has loaded them after a (re)start.
func (e *Environment) waitCRDsServed(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = nil
		for _, crd := range e.env.CRDs {
			if last = listOne(ctx, e.Client, crd); last != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the restarted API server does not serve the CRDs after %s: %w", d, errors.Join(err, last))
	}
	return nil
}

// listOne lists at most one object of crd's storage version.
func listOne(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			version = v.Name
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{
		Group:   crd.Spec.Group,
		Version: version,
		Kind:    crd.Spec.Names.ListKind,
	})
	return c.List(ctx, list, client.Limit(1))
}

// keepCertsAuthn stands in for the API server's authenticator while the
// server is stopped. It delegates to the original authenticator, so that
// the client CA and every user issued stay valid, and it writes the saved
// certificate files over those that the restart generated, just before the
// server starts.
type keepCertsAuthn struct {
	envtest.Authn
	// files are the certificate folder's files, by name.
	files map[string][]byte
	// ca is the CA of the serving certificate.
	ca []byte
	// dir is the restarted server's certificate folder.
	dir string
}

// Configure records the certificate folder and configures the original
// authenticator.
func (k *keepCertsAuthn) Configure(workDir string, args *envtest.Arguments) error {
	k.dir = workDir
	return k.Authn.Configure(workDir, args)
}

// Start starts the original authenticator and puts the saved certificate
// files back.
func (k *keepCertsAuthn) Start() error {
	if err := k.Authn.Start(); err != nil {
		return err
	}
	for name, data := range k.files {
		if err := os.WriteFile(filepath.Join(k.dir, name), data, 0o600); err != nil {
			return fmt.Errorf("restoring the API server's certificates: %w", err)
		}
	}
	return nil
}

// readFiles returns the regular files of dir, by name.
func readFiles(dir string) (map[string][]byte, error) {
	if dir == "" {
		return nil, errors.New("the API server has no certificate folder: is it running?")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, entry := range entries {
		if !entry.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, entry.Name()))
		if err != nil {
			return nil, err
		}
		files[entry.Name()] = data
	}
	return files, nil
}
