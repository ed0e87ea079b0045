// Package chart loads, checks and packages Helm charts for the HelmChart and
// HelmRelease controllers.
//
// Everything here treats its input as hostile. A chart comes either as a
// folder inside a source's extracted artifact (LoadDir) or as a packaged
// .tgz (LoadArchive); both end in the Helm SDK's loader.LoadFiles, but the
// files it sees are collected here under Limits:
//
//   - archives: entries must be regular files or folders with relative,
//     clean names (no "..", no leading "/", no "\", no drive letters); links,
//     devices and other special entries refuse the whole archive; the
//     compressed size, the size of each file, the total uncompressed size and
//     the number of files are capped, and so are nested subchart archives
//     (charts/*.tgz), which are checked with the same rules and budget before
//     the SDK opens them;
//   - folders: every read goes through an os.Root opened at the source root,
//     so the chart folder, the .helmignore, every file and every symbolic link
//     must resolve inside that root. A relative symbolic link whose target is
//     inside the root is followed and loaded as the file or folder it points
//     to (users keep shared templates that way); one that leaves the root, an
//     absolute one, a dangling one or a folder loop refuses the chart.
//     .helmignore rules are honoured as by helm package.
//
// A UTF-8 byte order mark is trimmed from the start of every loaded file, as
// the Helm SDK does, so that a BOM never breaks Chart.yaml, values.yaml or a
// template.
//
// ResolveDependencies completes a folder chart with its file:// dependencies
// (confined to the source root) and, through a Fetcher, its remote ones,
// under one budget for the whole tree: the chart and every dependency,
// counted each time it is included, share MaxTotalSize and MaxFiles, and
// the number of charts, their nesting and the downloads are bounded too
// (a *LimitError names the limit and the chart that passed it); each
// source is read once, and each inclusion is a chart of its own.
// MemorySize estimates what a loaded chart holds, for caches;
// MergeValuesFiles and MergeChartValuesFiles merge values files in order;
// Package writes the .tgz artifact with an optional version and values
// override, reproducibly; RevisionVersion builds the version of the Revision
// reconcile strategy; Safely turns a panic in the SDK into an error.
package chart
