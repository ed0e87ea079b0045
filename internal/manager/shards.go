package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/registry"
	"github.com/windlass-dev/windlass/internal/reselect"
	"github.com/windlass-dev/windlass/internal/shard"
)

// ShardOptions share the objects among the replicas of the controller.
type ShardOptions struct {
	// Mode is "auto" to share the objects among every replica that runs
	// with it, or empty for none (each replica reconciles what
	// --watch-label-selector selects, and --enable-leader-election makes
	// one of them do it).
	Mode string
	// By is what objects are hashed by: namespace or object.
	By string
	// Name is this replica's name in the ring; the host's name when empty.
	Name string
	// LeaseDuration is how long a replica that stopped renewing its Lease
	// keeps its objects.
	LeaseDuration time.Duration
}

// ShardsAuto is the ShardOptions.Mode that shares the objects.
const ShardsAuto = "auto"

// defaultShardOptions are the defaults of ShardOptions.
func defaultShardOptions() ShardOptions {
	return ShardOptions{By: string(shard.ByNamespace), LeaseDuration: 15 * time.Second}
}

// BindShardFlags binds the flags of o, the options of `windlass controller --shards`.
func BindShardFlags(fs *pflag.FlagSet, o *ShardOptions) {
	fs.StringVar(&o.Mode, "shards", o.Mode, "auto: share the objects among every replica that runs with --shards=auto (their Leases, in the runtime namespace, are the members); empty: none")
	fs.StringVar(&o.By, "shard-by", o.By, "with --shards=auto, what objects are hashed by: namespace (a namespace's objects stay together) or object; objects labelled sharding.fluxcd.io/key are hashed by its value")
	fs.StringVar(&o.Name, "shard-name", o.Name, "with --shards=auto, this replica's name among the members (default: the host's name, the pod's in a cluster)")
	fs.DurationVar(&o.LeaseDuration, "shard-lease-duration", o.LeaseDuration, "with --shards=auto, how long a replica that stopped renewing its Lease keeps its objects; it gives up at two thirds of it")
}

// auto reports whether the objects are shared among replicas.
func (o ShardOptions) auto() bool { return o.Mode == ShardsAuto }

// validate checks the options of opts.
func (o ShardOptions) validate(opts Options) error {
	switch o.Mode {
	case "":
		return nil
	case ShardsAuto:
	default:
		return fmt.Errorf("--shards=%s: only auto, or empty", o.Mode)
	}
	if opts.EnableLeaderElection {
		return errors.New("--shards=auto and --enable-leader-election exclude each other: every replica reconciles its share")
	}
	if _, err := shard.ParseBy(o.By); err != nil {
		return fmt.Errorf("--shard-by: %w", err)
	}
	if o.LeaseDuration < 3*time.Second {
		return errors.New("--shard-lease-duration must be at least 3s")
	}
	if o.Name != "" {
		return shard.CheckMemberName(o.Name)
	}
	return nil
}

// memberName returns --shard-name, or the host's name.
func (o ShardOptions) memberName() (string, error) {
	if o.Name != "" {
		return o.Name, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("no --shard-name given and no host name: %w", err)
	}
	return host, shard.CheckMemberName(host)
}

// HeldKinds are the kinds of controllers whose objects the replicas share:
// every kind they reconcile (Alerts and Providers are read by every
// replica, which sends the alerts of its own objects; ExternalArtifacts
// by every replica, written by their producer's holder).
func HeldKinds(controllers []string) []kinds.Kind {
	var out []kinds.Kind
	for _, name := range controllers {
		for _, k := range kinds.OfController(name) {
			if k.Reconciled() {
				out = append(out, k)
			}
		}
	}
	return out
}

// cachedByHolder returns the objects of the kinds that each replica caches
// only the objects it holds of.
func cachedByHolder() []client.Object {
	var out []client.Object
	for _, k := range kinds.Where(func(k kinds.Kind) bool { return k.CachedByHolder }) {
		out = append(out, k.New())
	}
	return out
}

// cacheSelector returns the label selector of the cache of k's objects, nil
// for all of them (or, for the kinds cached by holder with --shards=auto,
// for those that heldSelection selects): the --watch-label-selector
// (selector, nil when none) for the kinds it shards.
func (o Options) cacheSelector(k kinds.Kind, selector labels.Selector) labels.Selector {
	if k.Unsharded || o.cachedByBucket() && k.CachedByHolder {
		return nil
	}
	return selector
}

// cachedByBucket reports whether this replica caches only the objects of
// the buckets it holds, of the kinds cached by holder: with --shards=auto,
// unless it serves the web UI, whose overview of any replica shows every
// object (the controllers still run only those it holds).
func (o Options) cachedByBucket() bool { return o.Shards.auto() && o.UIAddr == "" }

// heldSelection returns the selection of the objects of the kinds cached
// by holder that this replica caches: those of the buckets it holds (none
// until it holds one), among those selector (the --watch-label-selector,
// nil when none) selects; nil when it caches them all.
func (o Options) heldSelection(selector labels.Selector) (*reselect.Selection, error) {
	if !o.cachedByBucket() {
		return nil, nil
	}
	return reselect.New(selector, shard.BucketLabel, nil)
}

// newShardClient returns the manager's client of a replica that shares
// the objects: it reads the objects of kinds cached by holder that it does
// not hold from the API server.
func newShardClient(config *rest.Config, options client.Options) (client.Client, error) {
	c, err := client.New(config, options)
	if err != nil {
		return nil, err
	}
	api, err := client.New(config, client.Options{Scheme: options.Scheme, Mapper: options.Mapper, HTTPClient: options.HTTPClient})
	if err != nil {
		return nil, err
	}
	return shard.ReadThrough(c, api, cachedByHolder()...), nil
}

// ringName names the ring of replicas that run the same controllers (as
// leaderElectionID does the lease).
func (o Options) ringName(controllers []string) string {
	if len(o.Controllers) == 0 || slices.Equal(controllers, AllControllers) {
		return "windlass"
	}
	return "windlass-" + strings.Join(controllers, "-")
}

// RingControllers returns the controllers whose replicas form ring (the
// inverse of ringName): every controller for "windlass", else those that
// "windlass-" + their names joined by "-" names; false when ring names a
// controller this build does not know.
func RingControllers(ring string) ([]string, bool) {
	if ring == "windlass" {
		return AllControllers, true
	}
	rest, ok := strings.CutPrefix(ring, "windlass-")
	if !ok {
		return nil, false
	}
	var out []string
	for _, word := range strings.Split(rest, "-") {
		if n := len(out); n > 0 && !slices.Contains(AllControllers, out[n-1]) {
			out[n-1] += "-" + word // a controller whose name has a dash: image-reflector
			continue
		}
		out = append(out, word)
	}
	for _, name := range out {
		if !slices.Contains(AllControllers, name) {
			return nil, false
		}
	}
	return out, true
}

// startShard makes this replica a member of the ring of the replicas that
// run controllers, when they share the objects.
func (m *Manager) startShard(cfg *rest.Config, controllers []string, opts *Options, member string, selector labels.Selector, held *reselect.Selection) error {
	if !opts.Shards.auto() {
		return nil
	}
	by, _ := shard.ParseBy(opts.Shards.By)
	watchNamespace := ""
	if !opts.WatchAllNamespaces {
		watchNamespace = opts.Namespace
	}
	s, err := shard.NewMember(cfg, m.GetCache(), m.GetRESTMapper(), shard.Options{
		Name: member, Ring: opts.ringName(controllers), Namespace: opts.Namespace, By: by,
		LeaseDuration: opts.Shards.LeaseDuration, Kinds: HeldKinds(controllers), Selector: selector,
		WatchNamespace: watchNamespace, Addresses: shardAddresses(controllers, opts),
	})
	if err != nil {
		return err
	}
	if held != nil {
		s.OnHeld(func(values []string) {
			if err := held.Set(values); err != nil {
				ctrl.Log.WithName("shard").Error(err, "Selecting the objects of the held buckets")
			}
		})
	}
	m.Shard = s
	opts.sharder = s
	return m.Add(s)
}

// Leave takes this replica out of the ring at once, when it is a member:
// call it after the manager stopped.
func (m *Manager) Leave(ctx context.Context) error {
	if m.Shard == nil {
		return nil
	}
	return m.Shard.Leave(ctx)
}

// imageTagsAddress names the address of a replica's tags server on its
// Lease.
const imageTagsAddress = "image-tags"

// shardAddresses are the base URLs of what this replica serves that only
// the holder of an object can answer: the scanned tags, and the artifacts
// of the sources it holds.
func shardAddresses(controllers []string, opts *Options) map[string]string {
	out := map[string]string{}
	if slices.Contains(controllers, ImageReflectorController) && opts.Image.TagsAddr != "" {
		if addr, ok := replicaAddress(opts.Image.TagsAddr); ok {
			out[imageTagsAddress] = "http://" + addr
		}
	}
	if slices.Contains(controllers, SourceController) {
		if addr, ok := replicaAddress(opts.Source.StorageAddr); ok {
			out[artifactsAddress] = "http://" + addr
		}
	}
	return out
}

// replicaAddress returns the address at which the other replicas reach a
// server of this one that listens on addr: the pod's IP ($POD_IP, else the
// host's name) when addr names no host.
func replicaAddress(addr string) (string, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		if host = os.Getenv("POD_IP"); host == "" {
			host, _ = os.Hostname()
		}
	}
	return net.JoinHostPort(host, port), true
}

// forwardTags passes a request for the tags of an ImageRepository that
// another replica holds to that replica.
func (m *Manager) forwardTags(tags http.Handler) http.Handler {
	if m.Shard == nil {
		return tags
	}
	return shard.Forward(tags, func(r *http.Request) string {
		namespace, name, ok := registry.ParseTagsPath(r.URL.Path)
		if !ok {
			return ""
		}
		var repo imagev1.ImageRepository
		if err := m.GetClient().Get(r.Context(), client.ObjectKey{Namespace: namespace, Name: name}, &repo); err != nil {
			return ""
		}
		holder := m.Shard.HolderOf(&repo)
		if holder == "" || holder == m.Shard.Name() {
			return ""
		}
		return m.Shard.AddressOf(holder, imageTagsAddress)
	})
}
