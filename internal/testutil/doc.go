// Package testutil is the test kit of the envtest stories: waiting for an
// object with the status rules checked (WaitFor), requesting a reconcile,
// reading the events about an object, downloading and unpacking an
// artifact, serving an artifact storage on loopback, writing and reading
// folders of files, running an in-process OCI registry and capturing the
// controllers' logs. Its sub-packages start the control plane (testenv),
// serve git (gitserver), run the OCI registry, S3 and cosign test servers
// (testservers), encrypt with SOPS (sopsfixture) and run child processes
// (childproc).
package testutil
