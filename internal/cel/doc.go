// Package cel compiles and evaluates the Common Expression Language (CEL)
// expressions that the Windlass APIs accept: a dependency's readyExpr
// (variables dep and self) and a Kustomization's healthCheckExprs (the
// object's top-level fields). An expression is compiled once, with the
// names of its variables declared as dynamic values, and must yield a bool.
// Evaluation takes the variables as unstructured content (map[string]any),
// is bounded by a cost limit and stops when its context ends.
//
// An expression that does not compile is a *CompileError: a configuration
// error that retrying does not fix, which a controller reports as a Stalled
// condition with the reason InvalidCELExpression.
package cel
