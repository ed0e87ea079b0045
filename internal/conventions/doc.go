// Package conventions holds no code: its tests check conventions that span
// the whole tree, such as how log lines are written (see DEVELOPERS.md and
// docs/development.md).
package conventions
