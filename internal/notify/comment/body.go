package comment

import (
	"strings"

	"github.com/windlass-dev/windlass/internal/notify"
)

// maxBody bounds a comment's body, under GitHub's limit of 65,536
// characters (GitLab's and Gitea's are larger).
const maxBody = 60000

// marker is the hidden first line of the comment of m's object.
func marker(m notify.Message) string {
	return "<!-- windlass:notification " + notify.ObjectID(m) + " -->"
}

// render is the comment of m in Markdown: the marker, a heading with the
// object and its state, the text, then the revision and metadata as a
// list.
func render(m notify.Message) string {
	state := "✅"
	if notify.IsError(m) {
		state = "❌"
	}
	var b strings.Builder
	b.WriteString(marker(m) + "\n")
	b.WriteString("### " + state + " " + notify.ObjectID(m) + "\n\n")
	b.WriteString(quote(notify.Text(m)) + "\n")
	list := facts(m)
	if len(list) > 0 {
		b.WriteString("\n")
	}
	for _, kv := range list {
		b.WriteString("- **" + escape(kv[0]) + "**: `" + strings.ReplaceAll(kv[1], "`", "'") + "`\n")
	}
	if by := strings.Trim(m.ReportingController+", "+eventTime(m), ", "); by != "" {
		b.WriteString("\n<sub>" + escape(by) + "</sub>\n")
	}
	out := b.String()
	if len(out) > maxBody {
		out = strings.ToValidUTF8(out[:maxBody], "") + "\n…"
	}
	return out
}

// facts are the revision, then the metadata people read.
func facts(m notify.Message) [][2]string {
	var out [][2]string
	if rev, ok := m.Revision(); ok {
		out = append(out, [2]string{"revision", rev})
	}
	for _, kv := range notify.Fields(m) {
		if !hidden(kv[0]) {
			out = append(out, kv)
		}
	}
	return out
}

// hidden tells whether a metadata key is shown elsewhere (the revision)
// or read only by the machinery.
func hidden(key string) bool {
	last := key[strings.LastIndexByte(key, '/')+1:]
	return last == "revision" || last == "token" || last == "commit_status" || last == "change_request"
}

// quote shows text as a Markdown block quote, so that it is not read as
// Markdown (headings, lists) where it has none.
func quote(text string) string {
	return "> " + strings.ReplaceAll(escape(text), "\n", "\n> ")
}

// escape keeps text from closing the marker or opening HTML.
func escape(text string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(text)
}

// eventTime is when the event happened, in RFC 3339, or "".
func eventTime(m notify.Message) string {
	if m.Timestamp.IsZero() {
		return ""
	}
	return m.Timestamp.UTC().Format("2006-01-02T15:04:05Z")
}
