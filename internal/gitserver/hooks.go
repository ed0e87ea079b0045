package gitserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// serverHooks are the hooks git-receive-pack runs on the server side of a
// push; SetHook accepts only these, so a test cannot install a client-side
// hook by mistake and wonder why it never runs.
var serverHooks = map[string]bool{
	"pre-receive":           true,
	"update":                true,
	"post-receive":          true,
	"post-update":           true,
	"push-to-checkout":      true,
	"proc-receive":          true,
	"reference-transaction": true,
}

// SetHook installs script as the server-side hook name (pre-receive,
// update, post-receive...) of the repository, replacing any previous one.
// The script is run by git-receive-pack with the environment git gives
// hooks (GIT_PUSH_OPTION_COUNT, GIT_PUSH_OPTION_<n>...), so it should start
// with a "#!" line; what it prints on stderr reaches the pushing client as
// "remote:" lines, and a pre-receive hook that exits non-zero refuses the
// whole push. An empty script removes the hook.
func (r *Repo) SetHook(name, script string) error {
	if !serverHooks[name] {
		return fmt.Errorf("gitserver: %q is not a server-side hook", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	dir := filepath.Join(r.path, "hooks")
	path := filepath.Join(dir, name)
	if script == "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("gitserver: remove hook %s of %s: %w", name, r.name, err)
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gitserver: hooks of %s: %w", r.name, err)
	}
	// Written to a temporary file and renamed, so that a push in progress
	// never runs a half-written hook.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
		return fmt.Errorf("gitserver: write hook %s of %s: %w", name, r.name, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("gitserver: install hook %s of %s: %w", name, r.name, err)
	}
	return nil
}

// SetConfig sets the configuration variable key (such as
// "receive.advertisePushOptions", which makes the server accept
// "git push -o" options) to value in the bare repository's config.
func (r *Repo) SetConfig(key, value string) error {
	if key == "" || strings.ContainsAny(key, "\n\x00") || strings.ContainsAny(value, "\x00") {
		return fmt.Errorf("gitserver: invalid config key or value %q", key)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.git(nil, "config", "--", key, value); err != nil {
		return fmt.Errorf("gitserver: config %s in %s: %w", key, r.name, err)
	}
	return nil
}
