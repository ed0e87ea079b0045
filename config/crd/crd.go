// Package crd carries the Windlass CustomResourceDefinitions that
// controller-gen writes to bases/, so that the binary can install them
// (`windlass dev`) without a checkout.
package crd

import (
	"embed"
	"fmt"
	"io/fs"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Bases holds bases/*.yaml, one CRD per file.
//
//go:embed bases/*.yaml
var Bases embed.FS

// Objects returns the CRDs of Bases, in file order.
func Objects() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(Bases, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, f := range files {
		data, err := Bases.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("reading the CRD in %s: %w", f, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}
