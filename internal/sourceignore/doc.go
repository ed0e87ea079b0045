// Package sourceignore decides which files of a source are left out of its
// artifact.
//
// The rules use gitignore syntax and come from three places, from lowest to
// highest priority:
//
//  1. DefaultExcludes (VCS metadata, CI configuration, images and archives),
//     unless the object sets spec.ignore, which then replaces them;
//  2. .sourceignore files anywhere in the tree, each scoped to its directory
//     like a .gitignore file, deeper files taking priority;
//  3. spec.ignore, scoped to the root.
//
// A later (higher priority) rule wins, so a .sourceignore file can re-include
// with "!pattern" what the defaults exclude. The default rules match without
// regard to case (".PNG" is excluded like ".png"); user rules are
// case-sensitive, as in Git. A ".git" directory or file is always excluded
// and cannot be re-included.
package sourceignore
