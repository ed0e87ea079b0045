// Package kubeconfig turns a kubeconfig that a tenant stored in a Secret into
// a *rest.Config the controller can use, refusing what would let the tenant
// act with the controller's own privileges.
//
// # The threat
//
// A kubeconfig is a description of how to reach and authenticate to a
// cluster, and client-go trusts it fully: it is written with the idea that
// the person who runs kubectl also wrote the file. A tenant kubeconfig breaks
// that assumption: the tenant writes it, the controller reads it. Several
// kubeconfig fields name files, and client-go reads them from the disk of
// the process that loads the kubeconfig:
//
//   - users[].user.tokenFile: the file's content becomes the bearer token,
//     and client-go reads the file again to refresh it. A tenant who points
//     it at /var/run/secrets/kubernetes.io/serviceaccount/token, and the
//     server at a host of their own, receives the controller's service
//     account token.
//   - users[].user.client-certificate and client-key: the controller's own
//     client certificate and key (or any PEM it can read) become the
//     tenant's credential.
//   - clusters[].cluster.certificate-authority: not a credential, but an
//     oracle: error messages tell whether a path exists and is readable.
//   - users[].user.auth-provider.config.idp-certificate-authority: the OIDC
//     provider reads this file.
//
// Other fields run code or weaken transport security:
//
//   - users[].user.exec runs a command of the tenant's choice, with
//     arguments and environment of the tenant's choice, inside the
//     controller; auth-provider plugins run in-process code paths and may
//     refresh and persist tokens.
//   - clusters[].cluster.insecure-skip-tls-verify, and a plain http server,
//     let anyone on the path read the manifests the controller applies,
//     including Secrets it decrypted, and substitute the server's answers.
//
// # The policy
//
// Parse refuses, in every user and cluster of the kubeconfig (not only the
// ones the current context names, so that a kubeconfig is either accepted
// or refused as a whole):
//
//   - every field that names a file: tokenFile, client-certificate,
//     client-key, certificate-authority and the auth-provider's
//     idp-certificate-authority. There is no switch for these: only inline
//     data (token, client-certificate-data, client-key-data,
//     certificate-authority-data) is accepted.
//   - exec and auth-provider, unless Policy.AllowExec is set (the
//     counterpart of a controller flag such as --insecure-kubeconfig-exec).
//     Note that no auth-provider plugin is compiled into the controller, so
//     an allowed auth-provider still fails when the client is made.
//   - insecure-skip-tls-verify and servers with an http:// URL, unless
//     Policy.AllowInsecureTLS is set (--insecure-kubeconfig-tls). With plain
//     http client-go sends no credentials at all.
//
// Parse accepts, and documents why:
//
//   - username and password: inline, like a token.
//   - impersonation (as, as-uid, as-groups, as-user-extra): the headers are
//     sent to the remote API server with the tenant's own credential, and
//     that server decides whether the credential may impersonate. The
//     controller lends nothing of its own. A caller that impersonates a
//     service account replaces these fields.
//   - proxy-url (http, https or socks5): the controller connects to a host
//     of the tenant's choice, which the server field allows already; TLS to
//     the API server runs through the proxy's tunnel, so the proxy sees no
//     credential unless the server is plain http, which the policy refuses
//     by default. Operators who restrict the controller's egress must
//     include proxies in that restriction.
//   - tls-server-name, disable-compression, extensions and namespaces.
//
// After client-go has made the rest.Config, Parse checks it again: no file
// name, no exec or auth provider unless allowed, no insecure transport
// unless allowed. This second check guards against a kubeconfig field this
// package does not know about.
//
// # Errors
//
// Errors never carry secret material: they name the kubeconfig entry and
// field, never a value, not even the refused file name. Errors of the
// kubeconfig decoder, which may quote the input, are cut down before they
// are returned. A refusal matches ErrRefused and is a *RefusedError; a
// kubeconfig that cannot be used matches ErrMalformed and is a
// *MalformedError. Both mean the Secret must change before a retry can
// succeed.
package kubeconfig
