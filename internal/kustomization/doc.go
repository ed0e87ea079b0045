// Package kustomization maps the spec of a Kustomization onto the domain
// packages that build and apply it, so that the kustomize controller and
// the CLI (windlass build, windlass diff) build the same objects from the
// same spec:
//
//   - BuildOptions maps the overlay fields (patches, images, components,
//     name prefix and suffix, target namespace, common and build metadata)
//     onto the options of internal/build;
//   - SubstituteVars reads the variables of postBuild.substituteFrom
//     (ConfigMaps and Secrets, optional or not) and merges them with
//     postBuild.substitute, a later source overriding an earlier one;
//   - Substitute runs the post-build substitution of internal/substitute
//     on the built documents when the spec asks for it, bounded in all by
//     substitute.MaxBuildGrowth;
//   - IgnoreRules compiles spec.ignore for internal/ssa;
//   - Owner and Inventory give the owner labels and the status inventory
//     in the terms of internal/ssa and internal/inventory.
//
// The package classifies nothing. Its errors are plain, typed
// (*SubstituteFromError) or match a sentinel of a domain package
// (substitute.ErrOutputTooLarge), and each caller turns them into its own
// reasons: the controller into conditions, the CLI into messages.
package kustomization
