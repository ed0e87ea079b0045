package comment

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/windlass-dev/windlass/internal/notify/notifytest"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/internal/notify"
)

// FuzzRender renders the comment of a message made from a fuzzed event,
// and reads its change_request metadata as Post does. It asserts that the
// comment starts with the object's marker line (by which it is found
// again); that it is at most maxBody bytes and the "…" of a cut; that
// it is valid UTF-8 when the event is; that, when not cut, it holds the
// text as a block quote with no '<' or '>' left; and that a change_request
// Post accepts is one positive decimal number, the value without blanks
// and '#'.
func FuzzRender(f *testing.F) {
	notifytest.AddSeeds(f, "n", "<b>bold</b> & `code` <!-- windlass:notification x -->\n> quoted", "second `revision`", false)
	f.Add("Kustomization", "preview", "apps", "Progressing", "Applying", "", eventv1.MetaChangeRequest, " #42 ", false, false, uint8(0))
	f.Add("Kustomization", "preview", "apps", "Progressing", "Applying", "", "event.toolkit.fluxcd.io/change_request", "+1", false, false, uint8(0))
	f.Add("Kustomization", "preview", "apps", "Progressing", "Applying", "", eventv1.MetaChangeRequest, "0", false, false, uint8(0))
	n := &notifier{forge: forges["githubpullrequestcomment"]}
	f.Fuzz(func(t *testing.T, kind, name, namespace, reason, text, revision, key, value string, failed, resolves bool, folded uint8) {
		m := notifytest.Message(kind, name, namespace, reason, text, revision, key, value, failed, resolves, folded)
		out := render(m)
		mark := marker(m)
		if len(mark) < maxBody && !strings.HasPrefix(out, mark+"\n") {
			t.Fatalf("the comment does not start with its marker %q", mark)
		}
		if len(out) > maxBody+len("\n…") {
			t.Fatalf("the comment is %d bytes, over %d", len(out), maxBody)
		}
		if notifytest.ValidUTF8(kind, name, namespace, reason, text, revision, key, value) && !utf8.ValidString(out) {
			t.Fatal("the comment is not valid UTF-8")
		}
		quoted := quote(notify.Text(m))
		for _, line := range strings.Split(quoted, "\n") {
			if rest, ok := strings.CutPrefix(line, "> "); !ok || strings.ContainsAny(rest, "<>") {
				t.Fatalf("the quoted text has the line %q", line)
			}
		}
		if !strings.HasSuffix(out, "\n…") && !strings.Contains(out, "\n\n"+quoted+"\n") {
			t.Fatalf("the comment does not quote the text:\n%s", out)
		}

		if _, ok := changeRequest(m); !ok {
			return
		}
		numbers, err := n.requests(context.Background(), m)
		if err != nil {
			return
		}
		v, _ := changeRequest(m)
		want := strings.TrimPrefix(strings.TrimSpace(v), "#")
		if len(numbers) != 1 || numbers[0] != want || strings.Trim(want, "0123456789") != "" {
			t.Fatalf("change_request %q gave the requests %q", v, numbers)
		}
		if id, err := strconv.ParseUint(want, 10, 63); err != nil || id == 0 {
			t.Fatalf("change_request %q gave the request %q", v, want)
		}
	})
}
