// Package health computes the health of Kubernetes objects,
// for the health checks of a Kustomization (spec.wait and
// spec.healthChecks) and the readiness of its dependencies.
//
// A Checker reads each object once per check, uncached (unless its
// Verdicts, from a watch that judged the object as it was delivered, know
// its health: see WithVerdicts), and computes its status with kstatus
// (sigs.k8s.io/cli-utils/pkg/kstatus/status): Current, InProgress or
// Failed (kstatus' Failed: the object is Stalled), or NotFound when the
// object, or its kind, does not exist. kstatus' Terminating and Unknown
// count as InProgress. Each status carries kstatus' message.
//
// A check does not wait: the caller checks again later, reading only the
// objects that were not ready, and reports a wait that ends with objects
// Failed or past its timeout as a *WaitError, which lists each of them with
// its status and message.
//
// # Custom health expressions
//
// A Kustomization's healthCheckExprs entries (Expr) replace kstatus for the
// objects they match. An entry matches an object when the group of its
// apiVersion is the object's group and, when it names a kind, the kind is
// the object's. The match is at group level: "example.com/v1" also matches
// example.com/v2 objects, and "example.com/*" matches every version. When
// several entries match, the one that names the kind wins over one that does
// not, then the one with the object's exact version, then one with a version
// wildcard, then the first listed.
//
// Each expression is CEL and sees the object's top-level fields as
// variables, as the reference implementation does: apiVersion, kind,
// metadata, spec and status (a field the object lacks is an empty map), so
// "status.phase == 'Ready'" or
// "status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.status == 'True')".
// When the object's status.observedGeneration is set and differs from
// metadata.generation, the object is InProgress and no expression runs.
// Otherwise inProgress, failed and current are evaluated in that order and
// the first that is true decides; when none is, the object is InProgress.
// An expression that fails to evaluate (a missing field, for instance)
// leaves the object InProgress with the error as its message, so a check
// waits for a status that is still being written rather than failing.
//
// An entry that does not compile is an *ExprError: a configuration error
// that a controller reports as Stalled with the reason InvalidCELExpression.
package health
