package shard

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Labels the sharding reads and writes.
const (
	// BucketLabel is on every object the members share: its bucket (see
	// BucketOf), by which a member's caches select the objects it holds;
	// and on the buckets' Leases.
	BucketLabel = "shard.windlass.dev/bucket"
	// RingLabel is on the members' and the buckets' Leases: the ring they
	// belong to.
	RingLabel = "shard.windlass.dev/ring"
	// KeyLabel pins objects by hand, as in the reference's sharding:
	// objects with the same value are hashed together, by that value.
	KeyLabel = "sharding.fluxcd.io/key"
)

// By is what objects are hashed by.
type By string

const (
	// ByNamespace keeps a namespace's objects on one replica: a tenant's
	// objects, their sources and their dependsOn stay together.
	ByNamespace By = "namespace"
	// ByObject spreads the objects of a namespace: each is hashed by its
	// namespace and name (so that objects of different kinds that share a
	// name, a source and its Kustomization say, stay together).
	ByObject By = "object"
)

// ParseBy returns the By that s names.
func ParseBy(s string) (By, error) {
	switch By(s) {
	case ByNamespace, ByObject:
		return By(s), nil
	}
	return "", fmt.Errorf("unknown sharding %q: namespace or object", s)
}

// Key returns what obj is hashed by: its KeyLabel when set, else its
// namespace, or its namespace and name.
func Key(obj v1.Object, by By) string {
	if k := obj.GetLabels()[KeyLabel]; k != "" {
		return "key:" + k
	}
	if by == ByObject {
		return obj.GetNamespace() + "/" + obj.GetName()
	}
	return obj.GetNamespace()
}

// CheckMemberName returns an error when name cannot be a member's name:
// it is a label value and part of a Lease's name.
func CheckMemberName(name string) error {
	if name == "" {
		return fmt.Errorf("the shard member's name is empty")
	}
	if errs := validation.IsValidLabelValue(name); len(errs) > 0 {
		return fmt.Errorf("the shard member's name %q is not a label value: %s", name, errs[0])
	}
	if errs := validation.IsDNS1123Subdomain(leaseName(name)); len(errs) > 0 {
		return fmt.Errorf("the shard member's name %q makes no Lease name: %s", name, errs[0])
	}
	return nil
}

// leaseName is the name of member's Lease.
func leaseName(member string) string { return "windlass-shard-" + member }
