package cli

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"

	"github.com/windlass-dev/windlass/internal/git"
)

// scanTimeout bounds the scan of an SSH server's host keys.
const scanTimeout = 30 * time.Second

// gitSecretFlags are the flags of `create secret git`.
type gitSecretFlags struct {
	url                string
	username, password string
	privateKeyFile     string
	knownHostsFile     string
	caFile             string
	// passwordStdin reads the password from standard input, so that it is
	// not in the command line that other users of the machine can see.
	passwordStdin bool
}

// bindPasswordStdin adds --password-stdin to fs.
func (s *gitSecretFlags) bindPasswordStdin(fs *pflag.FlagSet) {
	fs.BoolVar(&s.passwordStdin, "password-stdin", false, "read the password (or the key's passphrase) from standard input, not from the command line")
}

// maxPasswordBytes bounds what --password-stdin reads.
const maxPasswordBytes = 64 << 10

// readPasswordStdin sets the password from in when --password-stdin is set:
// its first line, without the line ending.
func (s *gitSecretFlags) readPasswordStdin(in io.Reader) error {
	if !s.passwordStdin {
		return nil
	}
	if s.password != "" {
		return errors.New("--password and --password-stdin: choose one")
	}
	password, err := readStdinLine(in, "--password-stdin", "password")
	s.password = password
	return err
}

// readStdinLine returns the first line of in, without its line ending: a
// secret that flag says to read from standard input, so that it is not in
// the command line. what names the secret in the errors, which never hold
// it.
func readStdinLine(in io.Reader, flag, what string) (string, error) {
	data, err := io.ReadAll(io.LimitReader(in, maxPasswordBytes))
	if err != nil {
		return "", fmt.Errorf("reading the %s from standard input: %w", what, err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return "", fmt.Errorf("%s: standard input holds no %s", flag, what)
	}
	return line, nil
}

func newCreateSecretCommand(f *createFlags) *cobra.Command {
	secret := &cobra.Command{Use: "secret", Short: "Create or update the Secrets that sources use"}
	s := &gitSecretFlags{}
	cmd := &cobra.Command{
		Use:   "git NAME",
		Short: "Create or update the Secret of a GitRepository's credentials",
		Long: `Create or update a Secret with the credentials of a Git repository, in the keys
the GitRepository controller reads: username and password for https (and
ca.crt for a private CA); identity, known_hosts (and password, the key's
passphrase) for ssh.

Without --known-hosts-file, the host keys are scanned from the URL's SSH
server: check the fingerprints printed on stderr against the ones your Git
host publishes. The Secret is printed only with --export.`,
		Example: `  windlass create secret git podinfo-auth --url https://github.com/stefanprodan/podinfo -u git -p "$TOKEN"
  windlass create secret git fleet-auth --url ssh://git@github.com/org/fleet --private-key-file ./id_ed25519
  windlass create secret git fleet-auth --url ssh://git@git.example.com/fleet \
    --private-key-file ./id_ed25519 --known-hosts-file ./known_hosts --export > fleet-auth.yaml`,
		Args: nameArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := s.readPasswordStdin(cmd.InOrStdin()); err != nil {
				return err
			}
			obj, err := s.object(cmd.Context(), cmd.ErrOrStderr(), args[0], f)
			if err != nil {
				return err
			}
			if !f.export {
				// The cluster gets data, which it keeps as it is given.
				obj.Data = map[string][]byte{}
				for k, v := range obj.StringData {
					obj.Data[k] = []byte(v)
				}
				obj.StringData = nil
			}
			return f.apply(cmd, obj, false)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&s.url, "url", "", "the repository's URL: https (basic auth) or ssh (a private key)")
	fs.StringVarP(&s.username, "username", "u", "", "the user name, for https")
	fs.StringVarP(&s.password, "password", "p", "", "the password or token for https; the private key's passphrase for ssh")
	fs.StringVar(&s.privateKeyFile, "private-key-file", "", "the SSH private key, for ssh")
	fs.StringVar(&s.knownHostsFile, "known-hosts-file", "", "the known_hosts of the SSH server (default: scanned from the URL's host)")
	fs.StringVar(&s.caFile, "ca-file", "", "a PEM bundle of the CAs to trust, for https")
	fs.StringVar(&s.caFile, "ca-crt-file", "", "the same as --ca-file")
	s.bindPasswordStdin(fs)
	secret.AddCommand(cmd, newCreateSecretOCICommand(f), newCreateSecretGitHubAppCommand(f))
	return secret
}

// object returns the Secret the flags declare, its values in stringData,
// or the first flag that is wrong. No error holds a secret value.
func (s *gitSecretFlags) object(ctx context.Context, errOut io.Writer, name string, f *createFlags) (*corev1.Secret, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	u, err := parseGitURL(s.url)
	if err != nil {
		return nil, err
	}
	var data map[string]string
	if u.Scheme == "ssh" {
		data, err = s.sshData(ctx, errOut, u)
	} else {
		data, err = s.httpData(errOut, u)
	}
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{ObjectMeta: om, StringData: data}, nil
}

// httpData returns the keys of a Secret for an http or https URL.
func (s *gitSecretFlags) httpData(errOut io.Writer, u *url.URL) (map[string]string, error) {
	switch {
	case s.privateKeyFile != "" || s.knownHostsFile != "":
		return nil, fmt.Errorf("--private-key-file and --known-hosts-file are for ssh URLs, and the URL is %s", u.Scheme)
	case (s.username == "") != (s.password == ""):
		return nil, errors.New("--username and --password go together: pass both")
	case s.username == "" && s.caFile == "":
		return nil, fmt.Errorf("an %s URL needs --username and --password, or --ca-file", u.Scheme)
	case s.caFile != "" && u.Scheme != "https":
		return nil, errors.New("--ca-file is for https URLs, and the URL is http")
	}
	data := map[string]string{}
	if s.username != "" {
		if u.Scheme == "http" {
			fmt.Fprintln(errOut, "⚠ the URL is http: the password will cross the network in clear text")
		}
		data[git.SecretKeyUsername], data[git.SecretKeyPassword] = s.username, s.password
	}
	if s.caFile != "" {
		ca, err := readCAFile(s.caFile)
		if err != nil {
			return nil, err
		}
		data[git.SecretKeyCACert] = string(ca)
	}
	return data, nil
}

// readCAFile reads --ca-file and checks that it holds certificates.
func readCAFile(path string) ([]byte, error) {
	ca, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading --ca-file: %w", err)
	}
	rest, n := ca, 0
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if _, err := x509.ParseCertificate(block.Bytes); block.Type != "CERTIFICATE" || err != nil {
			return nil, fmt.Errorf("--ca-file %s holds a %s block that is not a certificate", path, block.Type)
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", path)
	}
	return ca, nil
}

// sshData returns the keys of a Secret for an ssh URL.
func (s *gitSecretFlags) sshData(ctx context.Context, errOut io.Writer, u *url.URL) (map[string]string, error) {
	switch {
	case s.privateKeyFile == "":
		return nil, errors.New("an ssh URL needs --private-key-file")
	case s.username != "":
		return nil, errors.New("--username is for https: with ssh, put the user in the URL (ssh://git@host/repo)")
	case s.caFile != "":
		return nil, errors.New("--ca-file is for https URLs, and the URL is ssh")
	}
	identity, err := s.readPrivateKey()
	if err != nil {
		return nil, err
	}
	var hosts []byte
	if s.knownHostsFile != "" {
		hosts, err = readKnownHostsFile(s.knownHostsFile)
	} else {
		hosts, err = scanKnownHosts(ctx, errOut, u)
	}
	if err != nil {
		return nil, err
	}
	data := map[string]string{git.SecretKeyIdentity: string(identity), git.SecretKeyKnownHosts: string(hosts)}
	if s.password != "" {
		data[git.SecretKeyPassword] = s.password
	}
	return data, nil
}

// readPrivateKey reads --private-key-file and checks that it is an SSH
// private key that the passphrase, if any, opens.
func (s *gitSecretFlags) readPrivateKey() ([]byte, error) {
	identity, err := os.ReadFile(s.privateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("reading --private-key-file: %w", err)
	}
	_, err = ssh.ParsePrivateKey(identity)
	var missing *ssh.PassphraseMissingError
	encrypted := errors.As(err, &missing)
	if encrypted && s.password != "" {
		_, err = ssh.ParsePrivateKeyWithPassphrase(identity, []byte(s.password))
	}
	switch {
	case err == nil && !encrypted && s.password != "":
		return nil, errors.New("the --private-key-file key is not encrypted: leave --password out")
	case encrypted && s.password == "":
		return nil, errors.New("the --private-key-file key is encrypted: pass its passphrase with --password")
	case errors.Is(err, x509.IncorrectPasswordError):
		return nil, errors.New("--password does not open the --private-key-file key")
	case err != nil:
		return nil, fmt.Errorf("--private-key-file %s is not an SSH private key (%v)", s.privateKeyFile, err)
	}
	return identity, nil
}

// readKnownHostsFile reads --known-hosts-file and checks that it has host
// keys.
func readKnownHostsFile(path string) ([]byte, error) {
	hosts, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading --known-hosts-file: %w", err)
	}
	rest, n := hosts, 0
	for len(bytes.TrimSpace(rest)) > 0 {
		var err error
		_, _, _, _, rest, err = ssh.ParseKnownHosts(rest)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("--known-hosts-file %s is not in known_hosts format: %v", path, err)
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("--known-hosts-file %s has no host keys", path)
	}
	return hosts, nil
}

// scanAlgorithms are the host key algorithms asked of an SSH server, one
// connection each, as ssh-keyscan does.
var scanAlgorithms = []string{ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoRSASHA512}

// errScanned stops a handshake once the host key is known.
var errScanned = errors.New("host key scanned")

// scanKnownHosts returns the known_hosts lines of the SSH server of u, and
// prints their fingerprints on errOut.
func scanKnownHosts(ctx context.Context, errOut io.Writer, u *url.URL) ([]byte, error) {
	port := u.Port()
	if port == "" {
		port = "22"
	}
	address := net.JoinHostPort(u.Hostname(), port)
	ctx, cancel := context.WithTimeout(ctx, scanTimeout)
	defer cancel()
	var lines bytes.Buffer
	var lastErr error
	for _, algorithm := range scanAlgorithms {
		key, err := scanHostKey(ctx, address, algorithm)
		var dialErr *net.OpError
		if errors.As(err, &dialErr) && dialErr.Op == "dial" {
			lastErr = err
			break
		}
		if err != nil {
			lastErr = err
			continue
		}
		lines.WriteString(knownhosts.Line([]string{address}, key) + "\n")
		fmt.Fprintf(errOut, "◎ scanned the host key of %s: %s %s\n", address, key.Type(), ssh.FingerprintSHA256(key))
	}
	if lines.Len() == 0 {
		return nil, fmt.Errorf("scanning the SSH host keys of %s: %v: pass --known-hosts-file", address, lastErr)
	}
	return lines.Bytes(), nil
}

// scanHostKey returns the host key of algorithm that the SSH server at
// address offers, without authenticating.
func scanHostKey(ctx context.Context, address, algorithm string) (ssh.PublicKey, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	var key ssh.PublicKey
	cfg := &ssh.ClientConfig{User: "git", HostKeyAlgorithms: []string{algorithm},
		HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error {
			key = k
			return errScanned
		}}
	client, _, _, err := ssh.NewClientConn(conn, address, cfg)
	if client != nil {
		_ = client.Close()
	}
	if key != nil {
		return key, nil
	}
	return nil, err
}
