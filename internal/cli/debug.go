package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/monitoring"
)

// profileTypes are the profiles `windlass debug profile` fetches.
var profileTypes = []string{"heap", "profile", "goroutine", "allocs", "block", "mutex", "threadcreate"}

// maxProfileBytes bounds a profile read.
const maxProfileBytes = 256 << 20

// profileFlags are the flags of `windlass debug profile`.
type profileFlags struct {
	kube    kubeFlags
	pod     string
	url     string
	seconds int
	output  string
}

func newDebugCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:         "debug",
		Annotations: map[string]string{subcommandsAnnotation: subcommandsAreCommands},
		Short:       "Look inside a running controller",
	}
	f := &profileFlags{}
	profile := &cobra.Command{
		Use:   "profile [TYPE]",
		Short: "Fetch a Go profile of a controller (heap, profile for CPU, goroutine, allocs...)",
		Long: `Fetch a Go pprof profile of a running controller, started with --enable-pprof,
from its metrics port: through the API server's proxy to a pod of the
installation (--pod, else the first running pod of -n labelled
app.kubernetes.io/part-of=windlass), or from --url (a port-forward, windlass
dev, a local controller). TYPE is heap (the default), profile (CPU, over
--seconds), goroutine, allocs, block, mutex or threadcreate. Open the file
with go tool pprof.`,
		Example: `  windlass debug profile heap -o heap.pprof
  windlass debug profile profile --seconds 30 --pod windlass-5d9c7b-x2x9v
  windlass debug profile goroutine --url http://127.0.0.1:8080`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: profileTypes,
		RunE: func(cmd *cobra.Command, args []string) error {
			kind := "heap"
			if len(args) == 1 {
				kind = args[0]
			}
			return f.run(cmd, kind)
		},
	}
	f.kube.bind(profile)
	fs := profile.Flags()
	fs.StringVar(&f.pod, "pod", "", "the controller's pod (default: the first running pod of the installation in -n)")
	fs.StringVar(&f.url, "url", "", "the controller's metrics address (http://HOST:PORT), instead of a pod")
	fs.IntVar(&f.seconds, "seconds", 30, "how long a CPU profile (and block, mutex) samples")
	fs.StringVarP(&f.output, "output", "o", "", "the file to write (default TYPE.pprof)")
	cmd.AddCommand(profile)
	return cmd
}

func (f *profileFlags) run(cmd *cobra.Command, kind string) error {
	if !slices.Contains(profileTypes, kind) {
		return fmt.Errorf("unknown profile %q: choose one of heap, profile, goroutine, allocs, block, mutex, threadcreate", kind)
	}
	if f.seconds <= 0 {
		return fmt.Errorf("--seconds must be positive")
	}
	if f.output == "" {
		f.output = kind + ".pprof"
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), time.Duration(f.seconds)*time.Second+time.Minute)
	defer cancel()
	params := url.Values{}
	if kind == "profile" || kind == "block" || kind == "mutex" {
		params.Set("seconds", strconv.Itoa(f.seconds))
	}
	var (
		data []byte
		from string
		err  error
	)
	if f.url != "" {
		from = f.url
		data, err = fetchProfileURL(ctx, f.url, kind, params)
	} else {
		from, data, err = f.fetchFromPod(ctx, kind, params)
	}
	if err != nil {
		return err
	}
	if err := os.WriteFile(f.output, data, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "✔ %s profile of %s written to %s (%d bytes): go tool pprof %s\n", kind, from, f.output, len(data), f.output)
	return nil
}

// fetchProfileURL fetches the profile kind from the metrics address base.
func fetchProfileURL(ctx context.Context, base, kind string, params url.Values) ([]byte, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid --url %q: give the metrics address, such as http://127.0.0.1:8080", base)
	}
	u.Path, u.RawQuery = manager.PprofPath+kind, params.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the %s profile: %w", kind, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxProfileBytes))
	if err != nil {
		return nil, fmt.Errorf("reading the %s profile: %w", kind, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, profileRefused(base, resp.StatusCode)
	}
	return data, nil
}

// profileRefused explains a profile request answered with status.
func profileRefused(from string, status int) error {
	if status == http.StatusNotFound {
		return fmt.Errorf("%s serves no profiles (HTTP 404): start the controller with --enable-pprof", from)
	}
	return fmt.Errorf("%s answered the profile request with HTTP %d", from, status)
}

// fetchFromPod fetches the profile kind from the controller's pod through
// the API server's proxy, and returns which pod.
func (f *profileFlags) fetchFromPod(ctx context.Context, kind string, params url.Values) (string, []byte, error) {
	cfg, err := f.kube.restConfig()
	if err != nil {
		return "", nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", nil, err
	}
	pod, err := f.controllerPod(ctx, cs)
	if err != nil {
		return "", nil, err
	}
	port, ok := metricsPort(pod)
	if !ok {
		return "", nil, fmt.Errorf("pod %s/%s has no container port named %s (the metrics port)", pod.Namespace, pod.Name, monitoring.MetricsPort)
	}
	from := "pod " + pod.Namespace + "/" + pod.Name
	req := cs.CoreV1().RESTClient().Get().Namespace(pod.Namespace).Resource("pods").SubResource("proxy").
		Name(pod.Name + ":" + strconv.Itoa(int(port))).Suffix(manager.PprofPath + kind)
	for k := range params {
		req = req.Param(k, params.Get(k))
	}
	res := req.Do(ctx)
	var status int
	res.StatusCode(&status)
	data, err := res.Raw()
	if err != nil {
		if status == http.StatusNotFound {
			return "", nil, profileRefused(from, status)
		}
		return "", nil, fmt.Errorf("fetching the %s profile of %s: %w", kind, from, err)
	}
	return from, data, nil
}

// controllerPod returns --pod, or the first running pod of the
// installation in the namespace.
func (f *profileFlags) controllerPod(ctx context.Context, cs kubernetes.Interface) (*corev1.Pod, error) {
	ns := f.kube.namespace
	if f.pod != "" {
		return cs.CoreV1().Pods(ns).Get(ctx, f.pod, metav1.GetOptions{})
	}
	selector := monitoring.PodLabel + "=" + monitoring.PodLabelValue
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing the controllers' pods in %s: %w", ns, err)
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no running pod labelled %s=%s in namespace %s: is Windlass installed there (-n)?",
		monitoring.PodLabel, monitoring.PodLabelValue, ns)
}

// metricsPort returns the container port of pod's metrics.
func metricsPort(pod *corev1.Pod) (int32, bool) {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == monitoring.MetricsPort {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}
