package containerimage

import (
	"strings"
	"testing"
)

// FuzzParsePlatform feeds arbitrary text to ParsePlatform, the parser of
// the -platform flag (os/arch[/variant]=binary); this package takes no
// image reference of its own (Push hands its reference to
// go-containerregistry). For a platform it accepts, it asserts that the
// OS, architecture and binary are set, that no field holds the separators
// around it, and the round trip: String()+"="+Binary parses back to the
// same platform.
func FuzzParsePlatform(f *testing.F) {
	f.Add("linux/amd64=bin/windlass")
	f.Add("linux/arm64/v8=bin/windlass-arm64")
	f.Add("linux/arm64/=bin/x=y")
	f.Add("linux-amd64")
	f.Add("linux/amd64=")
	f.Add("/amd64=x")
	f.Add("linux/arm/v7/extra=x")
	f.Add("=x")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePlatform(s)
		if err != nil {
			if p != (Platform{}) {
				t.Fatalf("ParsePlatform(%q) returned %+v with the error %v", s, p, err)
			}
			return
		}
		switch {
		case p.OS == "" || p.Architecture == "" || p.Binary == "":
			t.Fatalf("ParsePlatform(%q) = %+v: a required field is empty", s, p)
		case strings.ContainsAny(p.OS+p.Architecture+p.Variant, "/="):
			t.Fatalf("ParsePlatform(%q) = %+v: a field holds a separator", s, p)
		}
		again, err := ParsePlatform(p.String() + "=" + p.Binary)
		if err != nil || again != p {
			t.Fatalf("ParsePlatform(%q) = %+v, but its String() %q and binary parse to %+v, %v", s, p, p.String(), again, err)
		}
	})
}
