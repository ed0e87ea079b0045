package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// rejectUnknownWords makes every group command (one that only holds
// others, such as `get`, `reconcile source` or `create secret`) fail on a
// word it does not know, with a one-line error that lists the words it
// knows, rather than print its help and exit 0. Without a word it still
// prints its help.
func rejectUnknownWords(root *cobra.Command) {
	for _, verb := range root.Commands() {
		walkCommands(verb, func(cmd *cobra.Command) {
			if cmd.Runnable() || !cmd.HasSubCommands() {
				return
			}
			cmd.Args = cobra.ArbitraryArgs
			cmd.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) == 0 {
					return cmd.Help()
				}
				return unknownKind(cmd, args[0])
			}
		})
	}
}

// unknownKind returns the error of the group command cmd given word, which
// names none of its subcommands: the closest ones, and all it knows.
func unknownKind(cmd *cobra.Command, word string) error {
	var known []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			known = append(known, c.Name())
		}
	}
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default for commands
	}
	guess := ""
	if near := cmd.SuggestionsFor(word); len(near) > 0 {
		guess = fmt.Sprintf(" (did you mean %s?)", strings.Join(near, " or "))
	}
	what := "kind"
	if cmd.Annotations[subcommandsAnnotation] == subcommandsAreCommands {
		what = "command"
	}
	return fmt.Errorf("unknown %s %q for %q%s: choose one of %s (see %s --help)",
		what, word, cmd.CommandPath(), guess, strings.Join(known, ", "), cmd.CommandPath())
}

// subcommandsAnnotation, set to subcommandsAreCommands on a group command
// whose subcommands are commands rather than kinds (windlass monitoring,
// windlass debug), words its errors so.
const (
	subcommandsAnnotation  = "windlass.dev/subcommands"
	subcommandsAreCommands = "commands"
)

// kindGroup is a first word that several kinds share ("source git",
// "image policy"): `get` lists them under its plural, and `get PLURAL all`
// shows them all.
type kindGroup struct {
	// word is the kinds' first word; plural names the group in `get`.
	word, plural string
	// what the group holds, for help texts.
	what string
}

// kindGroups are the groups of objectKinds.
var kindGroups = []kindGroup{
	{word: "source", plural: "sources", what: "sources (Git and OCI repositories, Buckets, Helm repositories and charts)"},
	{word: "image", plural: "images", what: "ImageRepositories, ImagePolicies and ImageUpdateAutomations"},
}

// kinds returns the kinds of the group, in the order of objectKinds.
func (g kindGroup) kinds() []objectKind {
	var out []objectKind
	for _, k := range objectKinds {
		if k.words[0] == g.word && len(k.words) > 1 {
			out = append(out, k)
		}
	}
	return out
}

// groupShort returns the Short of the group command word under verb, such
// as "Reconcile sources (Git and OCI repositories, ...)".
func groupShort(verb *cobra.Command, word string) string {
	what := word + "s"
	for _, g := range kindGroups {
		if g.word == word {
			what = g.what
		}
	}
	name := verb.Root().Name()
	if verb.HasParent() {
		name = verb.Name()
	}
	return strings.ToUpper(name[:1]) + name[1:] + " " + what
}

// kindExamples returns the Example of the command of kind k under verb:
// one line per args, with the kind's words.
func kindExamples(verb string, k objectKind, args ...string) string {
	lines := make([]string, 0, len(args))
	for _, a := range args {
		lines = append(lines, "  windlass "+verb+" "+strings.Join(k.words, " ")+" "+a)
	}
	return strings.Join(lines, "\n")
}
