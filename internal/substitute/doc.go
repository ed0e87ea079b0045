// Package substitute performs the post-build variable substitution of a
// Kustomization: ${var} references in the built objects are replaced by the
// values of postBuild.substitute and postBuild.substituteFrom.
//
// # Syntax
//
// The forms are those of bash parameter expansion:
//
//	${var}                  the value of var
//	${var:-default}         default when var is unset or empty
//	${var:=default}         the same (nothing is assigned)
//	${var-default}          default when var is unset
//	${var=default}          the same
//	${var:pos}              the value from character pos (negative: from the end)
//	${var:pos:len}          len characters from pos (negative len: stop that far from the end)
//	${var/pattern/repl}     the first occurrence of pattern replaced by repl
//	${var//pattern/repl}    every occurrence replaced
//
// Offsets count Unicode characters. Patterns are literal strings, not globs.
// Defaults, patterns and replacements may themselves hold references, which
// are expanded. A reference whose name is not a valid variable name (for
// example ${1} or ${#x} in an embedded shell script) and an unterminated
// "${" are left as they are, and so is $var without braces. A valid name
// followed by an operator that is not listed above is an error.
//
// Variable names must match ^[_[:alpha:]][_[:alpha:][:digit:]]*$; Substitute
// refuses variables with other names.
//
// In strict mode a reference to an unset variable without a default is an
// error naming the variable and the object; otherwise it expands to "".
//
// # Objects and types
//
// Substitution works on the YAML of each object, one scalar (key or value) at
// a time, never on raw text, so a value holding quotes, colons, "#" or
// newlines can neither break the document nor inject structure. Keys, quoted
// scalars and the fields Kubernetes defines as strings whatever they hold
// (labels and annotations, also in templates; ConfigMap and Secret data;
// container env values) stay strings. Any other plain (unquoted) scalar is
// typed by its result, as if the value had been written in its place: "3"
// becomes an integer, "true" a boolean, "1.5" a float, "null" a null;
// anything else is a string.
//
// Quoting only survives in YAML, so Build.Node, applied to the parsed
// documents of a build (build.Documents), and SubstituteYAML, to their
// YAML, are the faithful forms: a value written as "${x}" stays a string
// (unless kustomize itself rewrote the map holding it, which it does for
// annotations; the string-field rule covers those). Substitute works on
// decoded objects, where every string looks plain, so there a whole-value
// reference such as ${replicas} is typed by its result outside the string
// fields. A result that is not UTF-8 text is refused (ErrNotText).
//
// An object whose annotations or labels hold
// kustomize.toolkit.fluxcd.io/substitute: disabled is left untouched.
package substitute
