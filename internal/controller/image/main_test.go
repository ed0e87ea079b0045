package image_test

import (
	"os"
	"testing"

	"github.com/windlass-dev/windlass/internal/controller/image"
	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/registry"
	"github.com/windlass-dev/windlass/internal/testutil/testmanager"
)

// TestMain runs the image reflector, image automation and gating
// controllers of the real manager, with the tags server, against the test
// control plane.
func TestMain(m *testing.M) {
	os.Exit(testmanager.Suite{
		Env: image.Env, Logs: image.Logs,
		Controllers: []string{manager.ImageReflectorController, manager.ImageAutomationController, manager.GatingController},
		Started: func(_ *manager.Manager, opts manager.Options) (err error) {
			*image.TagsURL = "http://" + opts.Image.TagsAddr
			// A second reader of the files the controllers' store writes.
			*image.Store, err = registry.NewStore(opts.Source.StoragePath)
			return err
		},
	}.Run(m))
}
