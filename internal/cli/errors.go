package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
)

// nameArg is the Args of a command that takes exactly the one argument its
// Use names ("git NAME"): a missing one is "NAME is required".
func nameArg(cmd *cobra.Command, args []string) error {
	return checkArgs(cmd, args, 1, 1)
}

// optionalNameArg is the Args of a command that takes at most the one
// argument its Use names ("kustomization [NAME]").
func optionalNameArg(cmd *cobra.Command, args []string) error {
	return checkArgs(cmd, args, 0, 1)
}

// rangeArgs returns the Args of a command that takes min to max of the
// arguments its Use names.
func rangeArgs(minArgs, maxArgs int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		return checkArgs(cmd, args, minArgs, maxArgs)
	}
}

// checkArgs says which argument is missing, or that there are too many,
// by the placeholders of cmd's Use.
func checkArgs(cmd *cobra.Command, args []string, minArgs, maxArgs int) error {
	placeholders := strings.Fields(cmd.Use)[1:]
	usage := strings.TrimSpace(cmd.CommandPath() + " " + strings.Join(placeholders, " "))
	if len(args) < minArgs {
		missing := make([]string, 0, minArgs-len(args))
		for i := len(args); i < minArgs && i < len(placeholders); i++ {
			missing = append(missing, strings.Trim(placeholders[i], "[]."))
		}
		if len(missing) == 0 {
			missing = []string{"an argument"}
		}
		return fmt.Errorf("%s is required (usage: %s)", strings.Join(missing, " and "), usage)
	}
	if len(args) > maxArgs {
		return fmt.Errorf("too many arguments: %q (usage: %s)", strings.Join(args[maxArgs:], " "), usage)
	}
	return nil
}

// notFound returns the error of reading the object kind namespace/name:
// "not found: check its name and -n" when it does not exist, else err
// with what was read.
func notFound(kind, namespace, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return &missingError{msg: fmt.Sprintf("%s %s/%s not found: check its name and -n", kind, namespace, name), err: err}
	}
	return fmt.Errorf("reading %s %s/%s: %w", kind, namespace, name, err)
}

// missingError is the error of an object that does not exist: a message
// for the user, and the API server's answer for apierrors.IsNotFound.
type missingError struct {
	msg string
	err error
}

// Error returns the message for the user.
func (e *missingError) Error() string { return e.msg }

// Unwrap returns the API server's answer.
func (e *missingError) Unwrap() error { return e.err }

// listError says what to do when a kind cannot be listed: a cluster that
// does not serve it lacks the CRDs.
func listError(kinds string, err error) error {
	if apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
		return fmt.Errorf("listing %s: %w (are the Windlass CRDs installed in this cluster?)", kinds, err)
	}
	return fmt.Errorf("listing %s: %w", kinds, err)
}

// explainErrors makes the errors of every command of root say what the
// user can do rather than how client-go failed: an API server that does
// not answer, and a --timeout that ran out.
func explainErrors(root *cobra.Command) {
	walkCommands(root, func(cmd *cobra.Command) {
		if cmd.RunE == nil {
			return
		}
		run := cmd.RunE
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			return explain(cmd, run(cmd, args))
		}
	})
}

// explain rewrites err, returned by cmd, when it is one explainErrors
// knows.
func explain(cmd *cobra.Command, err error) error {
	if err == nil {
		return nil
	}
	var exit *ExitError
	if errors.As(err, &exit) {
		return err
	}
	if host, cause, ok := unreachable(err); ok {
		return fmt.Errorf("cannot reach the API server at %s (is windlass dev running?): %s", host, cause)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		if f := cmd.Flags().Lookup("timeout"); f != nil {
			return fmt.Errorf("%stimed out after %s (raise --timeout)", doing(err.Error()), f.Value)
		}
	}
	return err
}

// unreachable reports whether err is a request to the API server (a path
// under /api or /apis) that found nothing listening, with the server's
// host and the network's reason.
func unreachable(err error) (host, cause string, ok bool) {
	var urlErr *url.Error
	var opErr *net.OpError
	if !errors.As(err, &urlErr) || !errors.As(err, &opErr) || opErr.Op != "dial" {
		return "", "", false
	}
	u, perr := url.Parse(urlErr.URL)
	if perr != nil || !(strings.HasPrefix(u.Path, "/api/") || strings.HasPrefix(u.Path, "/apis/") || u.Path == "/api" || u.Path == "/apis") {
		return "", "", false
	}
	cause = opErr.Err.Error()
	if sys := errors.Unwrap(opErr.Err); sys != nil {
		cause = sys.Error()
	}
	return u.Host, cause, true
}

// doing returns the leading "what was being done: " of an error message
// that ends in client-go's account of a deadline, or "".
func doing(msg string) string {
	for _, internal := range []string{"client rate limiter Wait", "context deadline exceeded", "Get \"", "Patch \"", "Post \"", "Put \""} {
		if i := strings.Index(msg, internal); i > 0 {
			return msg[:i]
		}
	}
	return ""
}

// flagError makes a flag's parse error actionable: a flag that does not
// exist names the closest one, and a duration says its form.
func flagError(cmd *cobra.Command, err error) error {
	var missing *pflag.NotExistError
	if errors.As(err, &missing) {
		if near := closestFlag(cmd, missing.GetSpecifiedName()); near != "" {
			return fmt.Errorf("%w: did you mean --%s?", err, near)
		}
		return err
	}
	var invalid *pflag.InvalidValueError
	if errors.As(err, &invalid) && invalid.GetFlag() != nil && invalid.GetFlag().Value.Type() == "duration" {
		return fmt.Errorf("invalid --%s %q: write a duration like 1m or 30s", invalid.GetFlag().Name, invalid.GetValue())
	}
	return err
}

// closestFlag returns the long flag of cmd nearest to name, within two
// edits, or "".
func closestFlag(cmd *cobra.Command, name string) string {
	if name == "" {
		return ""
	}
	best, bestDistance := "", 3
	visit := func(f *pflag.Flag) {
		if d := editDistance(name, f.Name); d < bestDistance {
			best, bestDistance = f.Name, d
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	return best
}

// editDistance returns the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
