package cli

import (
	"context"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/windlass-dev/windlass/internal/scheme"
)

// printObjects prints objs as a v1 List, as kubectl does, in YAML or JSON,
// without their managed fields.
func printObjects(w io.Writer, format string, objs []listed) error {
	s := scheme.New()
	items := make([]client.Object, 0, len(objs))
	for _, l := range objs {
		obj := l.obj.DeepCopyObject().(client.Object)
		gvk, err := apiutil.GVKForObject(obj, s)
		if err != nil {
			return err
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		obj.SetManagedFields(nil)
		items = append(items, obj)
	}
	return printStructured(w, format, map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
}

// printObject prints the one object of `get KIND NAME -o yaml|json`,
// without its managed fields.
func printObject(w io.Writer, format string, l listed) error {
	obj := l.obj.DeepCopyObject().(client.Object)
	gvk, err := apiutil.GVKForObject(obj, scheme.New())
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	obj.SetManagedFields(nil)
	return printStructured(w, format, obj)
}

// watchRows prints a row for every change to the objects of kinds that
// match, from the resource versions listed, until ctx ends.
func watchRows(ctx context.Context, c client.WithWatch, w io.Writer, kinds []objectKind, versions []string,
	opts []client.ListOption, m matcher, table tableOptions) error {
	table.noHeader = true
	return watchChanges(ctx, c, kinds, versions, opts, m, func(k objectKind, obj reconcilable, gone bool) error {
		row := rowOf(k.kind, obj, k.revision(obj), obj.IsSuspended(), now())
		if gone {
			row.Ready, row.Message = "Deleted", ""
		}
		return printTable(w, []statusRow{row}, table)
	})
}

// watchChanges calls print for every change to the objects of kinds that
// match, from the resource versions listed, until ctx ends (nil then); a
// watch the API server ends is an error that says to run the command again.
func watchChanges(ctx context.Context, c client.WithWatch, kinds []objectKind, versions []string,
	opts []client.ListOption, m matcher, print func(k objectKind, obj reconcilable, gone bool) error) error {
	type change struct {
		kind objectKind
		obj  reconcilable
		gone bool
	}
	changes := make(chan change)
	ended := make(chan string, len(kinds))
	for i, k := range kinds {
		list, _ := k.newList()
		watcher, err := c.Watch(ctx, list, append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: versions[i]}})...)
		if err != nil {
			return fmt.Errorf("watching %s: %w", pluralKind(k.kind), err)
		}
		defer watcher.Stop()
		go func() {
			defer func() { ended <- k.kind }()
			for ev := range watcher.ResultChan() {
				obj, ok := ev.Object.(reconcilable)
				if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted) {
					continue
				}
				select {
				case changes <- change{kind: k, obj: obj, gone: ev.Type == watch.Deleted}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case kind := <-ended:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("the API server ended the watch of %s: run the command again", pluralKind(kind))
		case ch := <-changes:
			if !m.matches(ch.obj) {
				continue
			}
			if err := print(ch.kind, ch.obj, ch.gone); err != nil {
				return err
			}
		}
	}
}
