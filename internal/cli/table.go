package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
)

// statusRow is one object as `get` shows it.
type statusRow struct {
	Kind, Namespace, Name, Revision, Suspended, Ready, Message, Age string
	// Reason is the Ready condition's reason, and Detail its whole message
	// on one line, for -o wide.
	Reason, Detail string
}

// statusObject is an object with kstatus conditions.
type statusObject interface {
	client.Object
	conditions.Getter
}

// rowOf returns the row of obj, whose revision and suspension its kind
// knows, its age counted up to now.
func rowOf(kind string, obj statusObject, revision string, suspended bool, now time.Time) statusRow {
	r := statusRow{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Revision: revision,
		Suspended: fmt.Sprint(suspended), Ready: "Unknown", Age: age(obj.GetCreationTimestamp(), now)}
	if c := conditions.Get(obj, meta.ReadyCondition); c != nil {
		r.Ready, r.Message = string(c.Status), firstLine(c.Message)
		r.Reason, r.Detail = c.Reason, oneLine(c.Message)
	}
	if held := conditions.HeldByGate(obj, obj.GetGeneration()); held != "" && conditions.Reason(obj, meta.ReadyCondition) != meta.GateClosedReason {
		// Ready describes the last reconciliation; what comes next waits.
		r.Message = "held back: " + held + " Last: " + r.Message
	}
	return r
}

// age formats the time since t as kubectl does.
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// firstLine returns the first line of s: a table row holds one.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// oneLine returns s with its lines joined by spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " \n ")), " ")
}

// readyReason returns the reason of obj's Ready condition, or "".
func readyReason(obj conditions.Getter) string {
	if c := conditions.Get(obj, meta.ReadyCondition); c != nil {
		return c.Reason
	}
	return ""
}

// tableOptions say how a table is printed.
type tableOptions struct {
	// allNamespaces adds a NAMESPACE column.
	allNamespaces bool
	// kinds adds a KIND column, for `get all`.
	kinds bool
	// noHeader leaves the header out.
	noHeader bool
	// wide adds the Ready condition's reason, and prints its whole message.
	wide bool
}

// printTable prints rows as an aligned table.
func printTable(w io.Writer, rows []statusRow, o tableOptions) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	if !o.noHeader {
		fmt.Fprintln(tw, strings.Join(columns(o, statusRow{Kind: "KIND", Namespace: "NAMESPACE", Name: "NAME", Revision: "REVISION",
			Suspended: "SUSPENDED", Ready: "READY", Reason: "REASON", Message: "MESSAGE", Detail: "MESSAGE", Age: "AGE"}), "\t"))
	}
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(columns(o, r), "\t"))
	}
	return tw.Flush()
}

// columns returns the cells of r that o prints.
func columns(o tableOptions, r statusRow) []string {
	var cells []string
	if o.kinds {
		cells = append(cells, r.Kind)
	}
	if o.allNamespaces {
		cells = append(cells, r.Namespace)
	}
	if o.wide {
		return append(cells, r.Name, r.Revision, r.Suspended, r.Ready, r.Reason, r.Detail, r.Age)
	}
	return append(cells, r.Name, r.Revision, r.Suspended, r.Ready, r.Message, r.Age)
}
