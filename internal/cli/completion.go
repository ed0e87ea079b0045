package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// completeObjectNames gives every command that takes the name of an
// existing object of a kind (reconcile, suspend, delete, tree, ...) shell
// completion of the names of that kind's objects in the namespace. cobra's
// own `completion` command writes the bash, zsh, fish and PowerShell
// scripts that call it.
func completeObjectNames(root *cobra.Command) {
	for _, verb := range root.Commands() {
		if verb.Name() == "create" || verb.Name() == "get" {
			continue // new names, or no names at all
		}
		walkCommands(verb, func(cmd *cobra.Command) {
			if k, ok := kindOf(cmd); ok && cmd.Runnable() && cmd.ValidArgsFunction == nil {
				cmd.ValidArgsFunction = objectNames(k)
			}
		})
	}
}

// walkCommands calls f on cmd and every command under it.
func walkCommands(cmd *cobra.Command, f func(*cobra.Command)) {
	f(cmd)
	for _, c := range cmd.Commands() {
		walkCommands(c, f)
	}
}

// kindOf returns the kind whose words end the path of cmd ("source git").
func kindOf(cmd *cobra.Command) (objectKind, bool) {
	for _, k := range objectKinds {
		c := cmd
		matched := true
		for i := len(k.words) - 1; i >= 0 && matched; i-- {
			matched = c != nil && strings.TrimSuffix(c.Name(), "s") == k.words[i]
			c = c.Parent()
		}
		if matched {
			return k, true
		}
	}
	return objectKind{}, false
}

// objectNames completes the first argument with the names of the objects of
// kind k in the namespace of the command's flags.
func objectNames(k objectKind) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		flags := cmd.Flags()
		kube := kubeFlags{}
		kube.kubeconfig, _ = flags.GetString("kubeconfig")
		kube.context, _ = flags.GetString("context")
		kube.namespace, _ = flags.GetString("namespace")
		c, err := kube.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		list, all := k.newList()
		if err := c.List(cmd.Context(), list, client.InNamespace(kube.namespace)); err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var names []string
		for _, o := range all() {
			if strings.HasPrefix(o.GetName(), toComplete) {
				names = append(names, o.GetName())
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
