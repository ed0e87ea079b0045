package shard

import (
	"context"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReadThrough returns c, whose Get of an object of one of the types of
// objs that its cache does not hold reads it from api: a replica caches
// only the objects of those kinds that it holds, and reads another's
// (a dependency, say) from the API server.
func ReadThrough(c client.Client, api client.Reader, objs ...client.Object) client.Client {
	types := map[reflect.Type]bool{}
	for _, o := range objs {
		types[reflect.TypeOf(o)] = true
	}
	return &readThrough{Client: c, api: api, types: types}
}

type readThrough struct {
	client.Client
	api   client.Reader
	types map[reflect.Type]bool
}

// Get reads obj from the cache, or from the API server when the cache does
// not hold it and its kind is cached by holder.
func (r *readThrough) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.Client.Get(ctx, key, obj, opts...)
	if apierrors.IsNotFound(err) && r.types[reflect.TypeOf(obj)] {
		return r.api.Get(ctx, key, obj, opts...)
	}
	return err
}
