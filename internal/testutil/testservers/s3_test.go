package testservers

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	. "github.com/onsi/gomega"
)

func TestS3TakesAndListsObjectsWithSignedRequests(t *testing.T) {
	g := NewWithT(t)
	srv := StartS3(t, S3Options{Bucket: "artifacts"})
	ctx := context.Background()
	client := s3Client(srv, srv.SecretKey)

	_, err := client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(srv.Bucket),
		Key:    aws.String("apps/podinfo.yaml"),
		Body:   strings.NewReader("kind: ConfigMap\n"),
	})
	g.Expect(err).NotTo(HaveOccurred())

	list, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(srv.Bucket)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list.Contents).To(HaveLen(1))
	g.Expect(aws.ToString(list.Contents[0].Key)).To(Equal("apps/podinfo.yaml"))
	g.Expect(aws.ToInt64(list.Contents[0].Size)).To(BeEquivalentTo(len("kind: ConfigMap\n")))

	data, err := os.ReadFile(filepath.Join(srv.Dir, srv.Bucket, "apps", "podinfo.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(Equal("kind: ConfigMap\n"))
}

func TestS3RefusesWrongAndMissingSignatures(t *testing.T) {
	g := NewWithT(t)
	srv := StartS3(t, S3Options{AccessKey: "windlass", SecretKey: "right-secret-key"})
	g.Expect(srv.Bucket).To(Equal("windlass"))

	_, err := s3Client(srv, "wrong-secret-key").ListObjectsV2(context.Background(),
		&s3.ListObjectsV2Input{Bucket: aws.String(srv.Bucket)})
	var apiErr smithy.APIError
	g.Expect(errors.As(err, &apiErr)).To(BeTrue(), "want an S3 error, got %v", err)
	g.Expect(apiErr.ErrorCode()).To(Equal("SignatureDoesNotMatch"))

	resp, err := http.Get(srv.URL() + "/" + srv.Bucket)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden))

	_, err = s3Client(srv, srv.SecretKey).ListObjectsV2(context.Background(),
		&s3.ListObjectsV2Input{Bucket: aws.String(srv.Bucket)})
	g.Expect(err).NotTo(HaveOccurred())
}

// s3Client returns an S3 client for srv that signs with secret.
func s3Client(srv *S3, secret string) *s3.Client {
	return s3.New(s3.Options{
		Region:           srv.Region,
		BaseEndpoint:     aws.String(srv.URL()),
		UsePathStyle:     true,
		Credentials:      credentials.NewStaticCredentialsProvider(srv.AccessKey, secret, ""),
		RetryMaxAttempts: 1,
	})
}
