package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/shard"
)

// shardsCommand returns `get shards`: the members of the rings of
// `windlass controller --shards=auto`, from their Leases in the namespace
// of -n, and how many objects each holds.
func (f *getFlags) shardsCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "shards",
		Aliases: []string{"shard"},
		Short:   "Show the replicas that share the objects (--shards=auto), and how many each holds",
		Long: `Show the members of every ring of ` + "`windlass controller --shards=auto`" + ` whose
Leases are in the namespace of -n (the controller's runtime namespace, default
flux-system), one row per member: its ring (the replicas that run the same
controllers), its name, whether it is Live or since when its Lease has
Expired, how long ago it renewed its Lease, and how many objects of the kinds
of its ring's controllers, in every namespace, it holds: those whose bucket
(the label shard.windlass.dev/bucket) has a Lease (windlass-bucket-<ring>-<n>)
that names it. A last line counts the objects of buckets that a member that
is not live holds (its Lease expired or is gone), or that nobody holds yet,
by member: they wait for a live member to take their bucket.

HEALTH compares the Lease's renew time, written by the member's clock, with
this machine's clock: a clock that is off by a few seconds shows a member
Live or Expired that much too long. (The members themselves compare no
clocks.) Of the flags of get, it takes -n, --no-header and -o table, yaml
or json; with -o yaml or -o json, each member has ring, member, live,
renewTime, leaseDurationSeconds and objects, and heldByNoLiveMember counts
the objects by the member they name.`,
		Example: `  windlass get shards
  windlass get shards -n windlass-system -o yaml`,
		Args: cobra.NoArgs,
		RunE: f.runShards,
	}
}

// shardMember is one member of a ring, as `get shards` shows it.
type shardMember struct {
	Ring   string `json:"ring"`
	Member string `json:"member"`
	Live   bool   `json:"live"`
	// RenewTime is when the member last renewed its Lease, by its clock;
	// nil when never.
	RenewTime            *time.Time `json:"renewTime"`
	LeaseDurationSeconds int64      `json:"leaseDurationSeconds"`
	// Objects counts the objects of its ring's kinds that it holds.
	Objects int `json:"objects"`

	lease shard.MemberLease
}

// shardsReport is what `get shards` prints.
type shardsReport struct {
	Members []shardMember `json:"members"`
	// HeldByNoLiveMember counts, by the member they name, the objects
	// whose holder is not a live member of a ring that serves their kind.
	HeldByNoLiveMember map[string]int `json:"heldByNoLiveMember,omitempty"`
}

// runShards prints the members of the rings in the namespace of -n.
func (f *getFlags) runShards(cmd *cobra.Command, _ []string) error {
	for _, name := range []string{"all-namespaces", "label-selector", "status-selector", "watch"} {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("get shards takes no --%s: it shows the members of the rings of one namespace (-n)", name)
		}
	}
	if f.output != "table" && f.output != "yaml" && f.output != "json" {
		return fmt.Errorf("invalid --output %q for get shards: choose table, yaml or json", f.output)
	}
	c, err := f.kube.client()
	if err != nil {
		return err
	}
	at := now()
	report, err := readShards(cmd.Context(), c, f.kube.namespace, at)
	if err != nil {
		return err
	}
	if len(report.Members) == 0 {
		_, err := fmt.Fprintf(cmd.ErrOrStderr(), "no shard members found in namespace %s: no replica runs with --shards=auto there\n", f.kube.namespace)
		return err
	}
	if f.output != "table" {
		return printStructured(cmd.OutOrStdout(), f.output, report)
	}
	return printShards(cmd.OutOrStdout(), report, f.noHeader, at)
}

// readShards reads the members and the holders of the buckets from the
// Leases in namespace, and counts the objects each member holds (those of
// the buckets it holds), live as of at.
func readShards(ctx context.Context, c client.Client, namespace string, at time.Time) (shardsReport, error) {
	var leases coordinationv1.LeaseList
	if err := c.List(ctx, &leases, client.InNamespace(namespace), client.HasLabels{shard.RingLabel}); err != nil {
		return shardsReport{}, fmt.Errorf("listing the shard Leases in %s: %w", namespace, err)
	}
	var report shardsReport
	// live are the live members of the rings that serve each kind; ringOf
	// the ring that serves it; holders the holders of each ring's buckets.
	live := map[string][]string{}
	ringOf := map[string]string{}
	holders := map[string]map[int]string{}
	var counted []kinds.Kind
	for i := range leases.Items {
		if b, holder, ok := shard.ReadBucketLease(&leases.Items[i]); ok {
			ring := leases.Items[i].Labels[shard.RingLabel]
			if holders[ring] == nil {
				holders[ring] = map[int]string{}
			}
			holders[ring][b] = holder
			continue
		}
		lease, ok := shard.ReadLease(&leases.Items[i])
		if !ok {
			continue
		}
		m := shardMember{Ring: lease.Ring, Member: lease.Member, Live: lease.LiveAt(at),
			LeaseDurationSeconds: int64(lease.Duration / time.Second), lease: lease}
		if !lease.Renewed.IsZero() {
			m.RenewTime = ptr.To(lease.Renewed.UTC())
		}
		report.Members = append(report.Members, m)
		for _, k := range ringKinds(lease.Ring) {
			if !slices.ContainsFunc(counted, func(c kinds.Kind) bool { return c.Kind == k.Kind }) {
				counted = append(counted, k)
			}
			ringOf[k.Kind] = lease.Ring
			if m.Live {
				live[k.Kind] = append(live[k.Kind], m.Member)
			}
		}
	}
	sort.Slice(report.Members, func(i, j int) bool {
		a, b := report.Members[i], report.Members[j]
		if a.Ring != b.Ring {
			return a.Ring < b.Ring
		}
		return a.Member < b.Member
	})
	held := map[string]map[string]int{}
	for _, k := range counted {
		byBucket, err := countByBucket(ctx, c, k)
		if err != nil {
			return shardsReport{}, err
		}
		held[k.Kind] = map[string]int{}
		for b, n := range byBucket {
			holder := holders[ringOf[k.Kind]][b]
			held[k.Kind][holder] += n
			if holder == "" {
				holder = "nobody"
			}
			if !slices.Contains(live[k.Kind], holder) {
				if report.HeldByNoLiveMember == nil {
					report.HeldByNoLiveMember = map[string]int{}
				}
				report.HeldByNoLiveMember[holder] += n
			}
		}
	}
	for i, m := range report.Members {
		for _, k := range ringKinds(m.Ring) {
			report.Members[i].Objects += held[k.Kind][m.Member]
		}
	}
	return report, nil
}

// countByBucket counts the objects of k in every namespace that carry the
// bucket label, by bucket: a list of their metadata, a page at a time.
func countByBucket(ctx context.Context, c client.Client, k kinds.Kind) (map[int]int, error) {
	byBucket := map[int]int{}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(k.GroupVersion.WithKind(k.Kind + "List"))
	opts := []client.ListOption{client.HasLabels{shard.BucketLabel}, client.Limit(500)}
	for {
		if err := c.List(ctx, list, opts...); err != nil {
			return nil, listError(pluralKind(k.Kind), err)
		}
		for _, o := range list.Items {
			if b, ok := shard.ParseBucket(o.Labels[shard.BucketLabel]); ok {
				byBucket[b]++
			}
		}
		if list.Continue == "" {
			return byBucket, nil
		}
		opts = append(opts[:2:2], client.Continue(list.Continue))
	}
}

// ringKinds returns the kinds whose objects the members of ring hold: the
// kinds with a status of the controllers the ring's name joins (as
// `windlass controller` names it), or of every controller when the name
// is not one this build makes.
func ringKinds(ring string) []kinds.Kind {
	controllers, ok := manager.RingControllers(ring)
	if !ok {
		controllers = manager.AllControllers
	}
	return manager.HeldKinds(controllers)
}

// printShards prints the members as a table, ages counted up to at, then
// the line of the objects that no live member holds, when there are any.
func printShards(w io.Writer, report shardsReport, noHeader bool, at time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	if !noHeader {
		fmt.Fprintln(tw, "RING\tMEMBER\tHEALTH\tRENEWED\tOBJECTS")
	}
	for _, m := range report.Members {
		renewed := age(metav1.NewTime(m.lease.Renewed), at)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", m.Ring, m.Member, health(m.lease, at), renewed, m.Objects)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(report.HeldByNoLiveMember) == 0 {
		return nil
	}
	holders := make([]string, 0, len(report.HeldByNoLiveMember))
	total := 0
	for holder, n := range report.HeldByNoLiveMember {
		holders = append(holders, holder)
		total += n
	}
	sort.Slice(holders, func(i, j int) bool {
		a, b := report.HeldByNoLiveMember[holders[i]], report.HeldByNoLiveMember[holders[j]]
		if a != b {
			return a > b
		}
		return holders[i] < holders[j]
	})
	by := make([]string, 0, len(holders))
	for _, h := range holders {
		by = append(by, fmt.Sprintf("%d by %s", report.HeldByNoLiveMember[h], h))
	}
	what := "objects are"
	if total == 1 {
		what = "object is"
	}
	_, err := fmt.Fprintf(w, "%d %s held by no live member: %s\n", total, what, strings.Join(by, ", "))
	return err
}

// health returns the HEALTH of a member at at: Live, or how long ago its
// Lease expired.
func health(m shard.MemberLease, at time.Time) string {
	switch {
	case m.LiveAt(at):
		return "Live"
	case m.Renewed.IsZero():
		return "Never renewed"
	}
	return "Expired " + age(metav1.NewTime(m.Expires()), at) + " ago"
}
