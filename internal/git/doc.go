// Package git is the Git client of the GitRepository controller.
//
// It is built on go-git and does four things:
//
//   - Authentication: [NewAuthOptions] turns the URL of a GitRepository and
//     the data of the Secret named by spec.secretRef into [AuthOptions]
//     (HTTP basic auth, bearer token, CA bundle, mutual TLS, SSH key with a
//     mandatory known_hosts). Invalid combinations are reported as
//     [*InvalidAuthError], which the controller treats as a terminal spec
//     error.
//   - Checkout: [Client.Clone] resolves a [CheckoutOptions] reference (commit,
//     full reference name, semver range, tag or branch, in that order of
//     precedence) and checks it out in the client's work directory, shallow
//     where the reference allows it, optionally with submodules and a sparse
//     set of directories. When CheckoutOptions.LastObservedCommit still
//     matches the remote, Clone makes a single ls-remote request and returns
//     a partial [Commit] without cloning; [IsConcreteCommit] tells the two
//     apart.
//   - Verification: [Commit.Verify] and [Tag.Verify] check PGP signatures
//     against armored keyrings (Secret entries ending in .asc) and SSH
//     signatures (the SSHSIG format git writes with gpg.format=ssh) against
//     authorized_keys lines (entries ending in .sshpub).
//   - Error hygiene: every error returned by this package has the
//     credentials stripped from the URLs it mentions ([SanitizeURL],
//     [SanitizeError]); [IsAuthError] classifies refused credentials and
//     untrusted hosts for the controller's conditions.
//
// A [Client] writes only inside its work directory and never changes the
// process-wide go-git transport registry, so the controller can run several
// clones with different credentials concurrently, one Client each.
//
// Revisions follow RFC-0005 of the GitOps Toolkit: "main@sha1:<hex>",
// "v1.2.0@sha1:<hex>", "refs/pull/1/head@sha1:<hex>" or "sha1:<hex>" when
// only a commit was asked for (see [Commit.String]).
package git
