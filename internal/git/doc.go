// Package git is Windlass's Git client: the GitRepository controller clones
// with it, and image update automation commits and pushes with it.
//
// It is built on go-git and does six things:
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
//     set of directories; with CheckoutOptions.InMemory, a tree without
//     symbolic links stays in memory instead, read through [Client.Files].
//     When CheckoutOptions.LastObservedCommit still
//     matches the remote, Clone makes a single ls-remote request and returns
//     a partial [Commit] without cloning; [IsConcreteCommit] tells the two
//     apart.
//   - Workspaces: [Client.Open] checks out like Clone and returns a
//     [Workspace]: the caller edits the files in its Dir, [Workspace.Commit]
//     stages every change and commits it ([ErrNothingToCommit] when there
//     is none), signed by an OpenPGP key ([NewOpenPGPSigner]) or an SSH key
//     ([NewSSHSigner], the SSHSIG format of gpg.format=ssh), and
//     [Workspace.Push] pushes it to a branch (created when missing), a
//     refspec (Gerrit's refs/for/main) or both, with push options
//     (GitLab's merge_request.create) and, with [Workspace.AddNote], the
//     notes of refs/notes/commits, atomically when the server can. A push
//     never forces: when the remote has moved on it fails, before sending
//     anything, with a non-fast-forward [*PushRejectedError], and the
//     caller calls [Workspace.Refresh] (fetch the tip, reset hard), edits
//     and commits again, so that a concurrent commit is never overwritten;
//     a refusal by the server (a hook, a protected branch) is a
//     [*PushRejectedError] too, with the server's message, and is not
//     retried. The checks are made on the history the workspace holds,
//     shallow or not: what it cannot prove to be a fast-forward is not one.
//   - Verification: [Commit.Verify] and [Tag.Verify] check PGP signatures
//     against armored keyrings (Secret entries ending in .asc) and SSH
//     signatures (the SSHSIG format git writes with gpg.format=ssh) against
//     authorized_keys lines (entries ending in .sshpub).
//   - Error hygiene: every error returned by this package has the
//     credentials stripped from the URLs it mentions ([SanitizeURL],
//     [SanitizeError]); [IsAuthError] classifies refused credentials and
//     untrusted hosts for the controller's conditions.
//   - Size limits: a Clone (or a Workspace, Open, its Refreshes and Pushes
//     together) is bounded in bytes as well as in time
//     (CheckoutOptions.MaxTransferBytes, MaxObjectBytes and
//     MaxCheckoutBytes, 1, 2 and 2 GiB by default): what it receives from
//     the remote, the uncompressed objects it holds in memory (checked from
//     the object headers before anything is inflated) and the files it
//     writes. The repository and its submodules share the budgets. Over a
//     limit, Clone fails with a [*TooLargeError] (errors.Is(err,
//     [ErrTooLarge])) and drops the objects it fetched.
//
// A [Client] writes only inside its work directory. Its connections, those
// of a Clone as those of a Workspace's Open, Push and Refresh, are dialled
// by the package itself, so that they are bound to the context of the call
// and counted (see operation.go): for ssh through go-git's proxy
// hook, for http and https through a router installed once, at start-up, in
// go-git's transport registry, which hands every endpoint not routed to a
// Clone to go-git's own transport, unchanged. No per-clone setting is
// global, so the controller can run several clones with different
// credentials and limits concurrently, one Client each.
//
// Revisions follow RFC-0005 of the GitOps Toolkit: "main@sha1:<hex>",
// "v1.2.0@sha1:<hex>", "refs/pull/1/head@sha1:<hex>" or "sha1:<hex>" when
// only a commit was asked for (see [Commit.String]).
package git
