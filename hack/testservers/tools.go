//go:build tools

// Package testservers pins the real servers the tests run on loopback: the
// reference OCI registry (distribution), an S3 gateway over a folder
// (versitygw), the cosign CLI, the helm CLI (for releases made by
// another tool), and an OpenID provider (zitadel/oidc's example server, for
// the web UI's sign-in). They live in a module of their own so that
// their dependencies never enter Windlass's go.mod; hack/testservers.sh
// builds them once into the cache folder.
package testservers

import (
	_ "github.com/distribution/distribution/v3/cmd/registry"
	_ "github.com/sigstore/cosign/v3/cmd/cosign"
	_ "github.com/versity/versitygw/cmd/versitygw"
	_ "github.com/zitadel/oidc/v3/example/server"
	_ "helm.sh/helm/v4/cmd/helm"
)
