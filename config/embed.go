// Package config holds the manifests that install Windlass into a cluster,
// as kustomizations: the CRDs (crd/, generated), the RBAC (rbac/, role.yaml
// generated), the namespace, the controllers' Deployment, the artifact
// Service, the webhook receiver's and event endpoint's Services, the image
// tags Service (image-tags/) and the NetworkPolicy. `windlass install`
// renders them through the kustomize API from the copy embedded here, so
// the binary carries the manifests of its own version.
package config

import "embed"

// Manifests holds every kustomization of this folder, with the paths they
// have in it ("crd/kustomization.yaml", "manager/deployment.yaml", ...).
//
//go:embed crd/kustomization.yaml crd/bases/*.yaml rbac/*.yaml namespace/*.yaml manager/*.yaml service/*.yaml receiver/*.yaml events/*.yaml image-tags/*.yaml networkpolicy/*.yaml ui/*.yaml
var Manifests embed.FS
