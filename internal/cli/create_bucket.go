package cli

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// The keys of a Bucket's credentials Secret.
const (
	bucketAccessKey = "accesskey"
	bucketSecretKey = "secretkey"
)

// bucketSourceFlags are the flags of `create source bucket`.
type bucketSourceFlags struct {
	bucketName, endpoint, region, prefix string
	provider                             string
	insecure                             bool
	secretRef                            string
	// accessKey, with the secret key read from standard input
	// (secretKeyStdin), makes a Secret of the Bucket's name.
	accessKey               string
	secretKeyStdin          bool
	certRef, proxySecretRef string
	ignorePaths             []string
	interval, fetchTimeout  time.Duration
}

func newCreateSourceBucketCommand(f *createFlags) *cobra.Command {
	b := &bucketSourceFlags{}
	cmd := &cobra.Command{
		Use:   "bucket NAME",
		Short: "Create or update a Bucket",
		Long: `Create or update a Bucket: the objects of a bucket of an S3-compatible object
storage (--provider generic, the default), which the source controller
downloads and serves as an artifact.

Credentials come from --secret-ref, a Secret with accesskey and secretkey; or
pass --access-key with --secret-key-stdin to create that Secret, named like
the Bucket, with the secret key read from standard input (it is printed only
with --export). Without either, the bucket is read anonymously.`,
		Example: `  windlass create source bucket podinfo --bucket-name podinfo --endpoint minio.example.com:9000 --secret-ref minio-auth
  echo "$SECRET_KEY" | windlass create source bucket assets --bucket-name assets --endpoint s3.amazonaws.com \
    --region eu-west-1 --prefix manifests/ --access-key AKIA... --secret-key-stdin
  windlass create source bucket podinfo --bucket-name podinfo --endpoint minio.minio:9000 --insecure --export`,
		Args: nameArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			obj, err := b.object(args[0], f)
			if err != nil {
				return err
			}
			secret, err := b.secret(cmd.InOrStdin(), obj)
			if err != nil {
				return err
			}
			if secret != nil {
				if err := f.apply(cmd, secret, false); err != nil {
					return err
				}
			}
			return f.apply(cmd, obj, true)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&b.bucketName, "bucket-name", "", "the name of the bucket")
	fs.StringVar(&b.endpoint, "endpoint", "", "the object storage's host[:port], without a scheme, like minio.example.com:9000")
	fs.StringVar(&b.region, "region", "", "the region of the bucket")
	fs.StringVar(&b.prefix, "prefix", "", "only the objects whose keys start with this prefix")
	fs.StringVar(&b.provider, "provider", sourcev1.BucketProviderGeneric, "the object storage: generic, any S3 API (aws, gcp and azure are not served)")
	fs.BoolVar(&b.insecure, "insecure", false, "talk to the endpoint over plain HTTP")
	fs.StringVar(&b.secretRef, "secret-ref", "", "the Secret with the credentials, accesskey and secretkey")
	fs.StringVar(&b.accessKey, "access-key", "", "the access key: with --secret-key-stdin, create the Secret NAME of the credentials")
	fs.BoolVar(&b.secretKeyStdin, "secret-key-stdin", false, "read the secret key of --access-key from standard input")
	fs.StringVar(&b.certRef, "cert-ref", "", "the Secret with ca.crt (a CA to trust), tls.crt and tls.key (a client certificate)")
	fs.StringVar(&b.proxySecretRef, "proxy-secret-ref", "", "the Secret with the proxy's address, username and password")
	fs.StringSliceVar(&b.ignorePaths, "ignore-paths", nil, "paths to leave out of the artifact, gitignore syntax (repeat or separate with commas)")
	fs.DurationVar(&b.interval, "interval", time.Minute, "how often the bucket is checked")
	fs.DurationVar(&b.fetchTimeout, "fetch-timeout", 0, "how long object storage operations may take (the controller's default is 60s)")
	return cmd
}

// object returns the Bucket the flags declare, or the first flag that is
// wrong.
func (b *bucketSourceFlags) object(name string, f *createFlags) (*sourcev1.Bucket, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	if err := checkBucketName(b.bucketName); err != nil {
		return nil, err
	}
	if err := checkEndpoint(b.endpoint); err != nil {
		return nil, err
	}
	spec := sourcev1.BucketSpec{BucketName: b.bucketName, Endpoint: b.endpoint, Region: b.region, Prefix: b.prefix,
		Insecure: b.insecure, Ignore: ignoreRules(b.ignorePaths)}
	if spec.Interval, err = positiveDuration("--interval", b.interval); err != nil {
		return nil, err
	}
	if spec.Timeout, err = optionalDuration("--fetch-timeout", b.fetchTimeout); err != nil {
		return nil, err
	}
	if err := b.credentials(&spec, name); err != nil {
		return nil, err
	}
	return &sourcev1.Bucket{ObjectMeta: om, Spec: spec}, nil
}

// credentials sets the provider and the references of spec that the flags
// give; with --access-key, the Secret is the one of the Bucket's name.
func (b *bucketSourceFlags) credentials(spec *sourcev1.BucketSpec, name string) error {
	if err := servedProvider(b.provider); err != nil {
		return err
	}
	spec.Provider = b.provider
	switch {
	case b.accessKey != "" && b.secretRef != "":
		return errors.New("--secret-ref and --access-key: choose one (--access-key creates the Secret NAME)")
	case b.accessKey != "" && !b.secretKeyStdin:
		return errors.New("--access-key needs --secret-key-stdin: pass the secret key on standard input")
	case b.secretKeyStdin && b.accessKey == "":
		return errors.New("--secret-key-stdin needs --access-key")
	}
	secretRef := b.secretRef
	if b.accessKey != "" {
		secretRef = name
	}
	var err error
	if spec.SecretRef, err = localRef("--secret-ref", secretRef); err != nil {
		return err
	}
	if spec.CertSecretRef, err = localRef("--cert-ref", b.certRef); err != nil {
		return err
	}
	spec.ProxySecretRef, err = localRef("--proxy-secret-ref", b.proxySecretRef)
	return err
}

// secret returns the Secret of --access-key, its secret key read from in,
// with the name, namespace and labels of bucket; nil without
// --access-key.
func (b *bucketSourceFlags) secret(in io.Reader, bucket *sourcev1.Bucket) (*corev1.Secret, error) {
	if b.accessKey == "" {
		return nil, nil
	}
	secretKey, err := readStdinLine(in, "--secret-key-stdin", "secret key")
	if err != nil {
		return nil, err
	}
	om := *bucket.ObjectMeta.DeepCopy()
	return &corev1.Secret{ObjectMeta: om, Data: map[string][]byte{
		bucketAccessKey: []byte(b.accessKey), bucketSecretKey: []byte(secretKey)}}, nil
}

// checkBucketName checks --bucket-name: a name, without a folder.
func checkBucketName(name string) error {
	switch {
	case name == "":
		return errors.New("--bucket-name is required: the name of the bucket")
	case strings.ContainsAny(name, "/ \t\n"):
		return fmt.Errorf("--bucket-name %q is not a bucket name: no slashes or spaces (a folder of the bucket goes in --prefix)", name)
	}
	return nil
}

// checkEndpoint checks --endpoint: a host[:port], without a scheme, a path
// or credentials. An endpoint that may hold credentials is not echoed.
func checkEndpoint(endpoint string) error {
	switch {
	case endpoint == "":
		return errors.New("--endpoint is required: the object storage's host[:port], like minio.example.com:9000")
	case strings.Contains(endpoint, "://"):
		return errors.New("--endpoint is a host[:port], without a scheme: leave it out, and pass --insecure for plain HTTP")
	case strings.Contains(endpoint, "@"):
		return errors.New("--endpoint must not carry credentials: pass --secret-ref, or --access-key and --secret-key-stdin")
	case strings.ContainsAny(endpoint, "/?#"):
		return fmt.Errorf("--endpoint %q is a host[:port], without a path: a folder of the bucket goes in --prefix", endpoint)
	}
	u, err := url.Parse("//" + endpoint)
	if err != nil || u.Hostname() == "" || u.Host != endpoint {
		return fmt.Errorf("--endpoint %q is not a host[:port], like minio.example.com:9000", endpoint)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("--endpoint %q has no valid port: write host:PORT, PORT from 1 to 65535", endpoint)
		}
	}
	return nil
}
