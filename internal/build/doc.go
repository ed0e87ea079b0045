// Package build builds the manifests of a Kustomization from an extracted
// source artifact, confined to that artifact.
//
// # Generating a kustomization
//
// Generate writes a kustomization.yaml into a directory that has none, listing
// every Kubernetes manifest below it (files ending in .yaml, .yml or .json,
// matched case-insensitively, whose documents carry apiVersion and kind).
// Sub-directories that hold their own kustomization file are listed as a
// whole instead of file by file. Entries are sorted, so the file is the same
// for the same tree.
//
// # Overlays
//
// The overlay fields of a Kustomization (patches, images, components, name
// prefix and suffix, target namespace, common metadata) are described by
// Options. Build never edits the user's kustomization file. Instead it serves
// a generated overlay kustomization from memory, in a virtual directory beside
// root, whose only resource is the user's path. kustomize therefore applies
// the options on top of whatever the user's kustomization produced, exactly as
// a hand-written overlay would: a name prefix from the options is prepended to
// any prefix the user set, the target namespace overrides the user's, and so
// on. The virtual directory lives outside root because kustomize refuses a
// base that is an ancestor of its overlay, and the user's path is often root
// itself.
//
// A generated kustomization (one served from memory where the disk has none,
// that names resources only) transforms nothing, so the options are written
// into it instead: one kustomization builds the same objects as the two, in
// less time and memory. Build metadata keeps the overlay, whose paths its
// annotations are written relative to.
//
// Components are the exception: as in the Kustomization API they are paths
// relative to the user's path and run inside the user's kustomization, so
// that their patches see the objects under their original names and the
// objects they add get the user's namespace and prefix. Build serves an
// in-memory copy of the user's kustomization file with the components
// appended; the file on disk is not changed.
//
// Common labels use the labels field without selectors or templates, so they
// never change a selector or roll a pod template. Common annotations are
// applied by a builtin AnnotationsTransformer restricted to
// metadata.annotations for the same reason (kustomize's commonAnnotations
// would also annotate pod templates).
//
// # Confinement
//
// Every file kustomize reads goes through ConfinedFS, a read-only
// filesys.FileSystem that resolves symbolic links itself, one path element at
// a time, and refuses any path that leaves root: absolute paths elsewhere,
// ".." that climbs out, and links whose target is outside root. Links that
// stay inside root work. Only regular files can be read, so a FIFO or device
// cannot block or feed a build.
//
// kustomize runs with builtin plugins only (no exec, Go or KRM function
// plugins, no Helm) and with its load restrictor set to root-only.
//
// Before kustomize runs, every kustomization reachable from the overlay is
// scanned, including builtin plugin configurations named by generators,
// transformers and validators. Any reference that kustomize would fetch over
// the network or clone with git (http, https, ssh, file and git URLs, scp-like
// user@host:path, github.com/...) is refused, whether or not
// Options.NoRemoteBases is set: Windlass builds only what is inside the
// artifact, and the source controller is the only component that fetches.
// Absolute paths are refused too.
//
// # Concurrency and failure
//
// kustomize has known data races when several builds run at once, so Build
// serialises all builds in the process behind one mutex. A panic inside
// kustomize is recovered and returned as an error. Kustomizations that refer
// to themselves or form a cycle fail with kustomize's cycle error; the scan
// visits each directory at most once, so it cannot loop either.
//
// # Large builds
//
// kustomize's time grows with the square of the objects built, and one
// mutex means one build at a time: a tenant's build of many thousands of
// objects would hold every other for minutes, with nothing to end it. A
// Builder measures a build's input first (the kustomization files and the
// files they reach, a base counted each time it is included): a small
// build runs in this process, a large one in a child process of the
// running binary (see internal/isolate), bounded in memory, output and
// time and ended by its context. The child builds with BuildYAML and sends
// the documents back.
//
// # Output
//
// A build's objects are Documents, in kustomize's legacy order (by kind,
// then by name), which is deterministic. They keep the quoting of the
// sources, which post-build substitution depends on. A build in this
// process hands over the nodes kustomize parsed, edited and decoded in
// place; a build process sends YAML (BuildYAML), parsed once, a document at
// a time. Build decodes them into unstructured objects.
package build
