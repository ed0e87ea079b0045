// Package netguard says which addresses the controllers may connect to on
// behalf of what a tenant declares or pushes: a Provider's address, the
// repository of a chart dependency. One process serves every tenant, and
// it can reach what no tenant should: its own ports and sidecars on
// loopback, the cloud's metadata endpoints (credentials of the node or the
// pod), the cluster's internal services.
//
// A Policy classes an IP address as one of:
//
//   - metadata: link-local (169.254.0.0/16, fe80::/10, where most clouds
//     serve metadata) and the metadata endpoints at other addresses
//     (AWS's fd00:ec2::254, Alibaba's 100.100.100.200);
//   - loopback: 127.0.0.0/8, ::1, and the unspecified addresses 0.0.0.0
//     and ::, which reach the local host too;
//   - private: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10
//     (shared address space) and fc00::/7 (unique local), where a
//     cluster's Services and a company's network live;
//   - public: everything else.
//
// and refuses each class it does not allow. The check runs on the address
// actually dialled (a dialer's Control), so a name that resolves to a
// refused address, or a redirect to one, is refused too; CheckHost refuses
// a literal address before any request is made. Through a proxy the
// dialled address is the proxy's: the target is checked only when it is a
// literal address.
package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// The errors of refused addresses; match them with errors.Is.
var (
	// ErrLinkLocal: a link-local or cloud metadata address.
	ErrLinkLocal = errors.New("the address is link-local or a cloud metadata endpoint: refused unless the controller runs with --allow-link-local-addresses")
	// ErrLoopback: a loopback or unspecified address, the controller's own
	// host.
	ErrLoopback = errors.New("the address is the controller's own host (loopback): refused unless the controller runs with --allow-loopback-addresses")
	// ErrPrivate: a private address, refused where only public ones are
	// allowed.
	ErrPrivate = errors.New("the address is private (a cluster's or a company's network)")
)

// Policy is the classes of address a connection may reach beyond public
// ones. Its zero value allows public addresses only.
type Policy struct {
	// AllowLinkLocal allows link-local and cloud metadata addresses.
	AllowLinkLocal bool
	// AllowLoopback allows loopback and unspecified addresses.
	AllowLoopback bool
	// AllowPrivate allows private addresses (not the metadata endpoints
	// among them, which AllowLinkLocal governs).
	AllowPrivate bool
}

// metadataAddrs are the cloud metadata endpoints outside link-local space.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IMDS over IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
}

// privatePrefixes are the private ranges beyond those Addr.IsPrivate knows
// (10/8, 172.16/12, 192.168/16, fc00::/7).
var privatePrefixes = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"), // shared address space (RFC 6598)
}

// Check refuses ip when the policy does not allow its class.
func (p Policy) Check(ip netip.Addr) error {
	ip = ip.Unmap()
	switch {
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || isMetadata(ip):
		if !p.AllowLinkLocal {
			return ErrLinkLocal
		}
	case ip.IsLoopback() || ip.IsUnspecified():
		if !p.AllowLoopback {
			return ErrLoopback
		}
	case isPrivate(ip):
		if !p.AllowPrivate {
			return ErrPrivate
		}
	}
	return nil
}

// CheckHost refuses hostname when it is a literal address the policy does
// not allow ("localhost" counts as loopback); other names are checked when
// they are dialled.
func (p Policy) CheckHost(hostname string) error {
	hostname = strings.Trim(hostname, "[]")
	if strings.EqualFold(strings.TrimSuffix(hostname, "."), "localhost") {
		return p.Check(netip.IPv6Loopback())
	}
	if i := strings.IndexByte(hostname, '%'); i >= 0 {
		hostname = hostname[:i] // a zone does not change the class
	}
	ip, err := netip.ParseAddr(hostname)
	if err != nil {
		return nil
	}
	return p.Check(ip)
}

// Control is a net.Dialer's Control: it refuses to connect to an address
// the policy does not allow, whatever name resolved to it.
func (p Policy) Control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("dialling %q: not an IP address", address)
	}
	return p.Check(ip)
}

// Dialer returns a dialer with timeout that connects only to addresses the
// policy allows.
func (p Policy) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: p.Control}
}

func isMetadata(ip netip.Addr) bool {
	for _, m := range metadataAddrs {
		if ip == m {
			return true
		}
	}
	return false
}

func isPrivate(ip netip.Addr) bool {
	if ip.IsPrivate() {
		return true
	}
	for _, prefix := range privatePrefixes {
		if prefix.Contains(ip) {
			return true
		}
	}
	return false
}
