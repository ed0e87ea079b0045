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

// ShardMoves is windlass_shard_moves_total: the objects this replica
// claimed (held by nobody, or by a member that left) or handed over to the
// member the ring gives them to.
var ShardMoves = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "windlass_shard_moves_total",
	Help: "Objects this replica claimed (move=claimed) or handed over (move=handed_over) as the replicas came and went.",
}, []string{kindLabel, "move"})

func init() {
	crmetrics.Registry.MustRegister(ShardMembers, ShardMoves)
}
