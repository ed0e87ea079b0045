package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ShardMembers is windlass_shard_members: the live members of the ring
// this replica belongs to, as it sees them (--shards=auto).
var ShardMembers = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "windlass_shard_members",
	Help: "The replicas sharing the objects, as this replica sees them (--shards=auto).",
})

// ShardBuckets is windlass_shard_buckets: the buckets of objects this
// replica holds (--shards=auto).
var ShardBuckets = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "windlass_shard_buckets",
	Help: "The buckets of objects this replica holds (--shards=auto).",
})

// ShardBucketMoves is windlass_shard_bucket_moves_total: the buckets this
// replica claimed (held by nobody, or by a member that left) or handed
// over to the member the ring assigns them to.
var ShardBucketMoves = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "windlass_shard_bucket_moves_total",
	Help: "Buckets of objects this replica claimed (move=claimed) or handed over (move=handed_over) as the replicas came and went.",
}, []string{"move"})

// ShardLabelled is windlass_shard_labelled_total: the objects this
// replica labelled with their bucket (new ones, and those whose key moved
// them to another bucket).
var ShardLabelled = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "windlass_shard_labelled_total",
	Help: "Objects this replica labelled with their shard bucket: new ones, and those whose key moved them.",
}, []string{kindLabel})

func init() {
	crmetrics.Registry.MustRegister(ShardMembers, ShardBuckets, ShardBucketMoves, ShardLabelled)
}
