package source

// Where the suite's TestMain stores the control plane, the controller's
// storage, cached client, shared Helm indexes and logs.
var (
	Env         = &env
	Storage     = &storage
	K8s         = &k8s
	HelmIndexes = &helmIndexes
	Logs        = &logs
)

// The limits of the tests' controller.
const (
	MaxCloneSize     = maxCloneSize
	MaxFetchSize     = maxFetchSize
	MaxHelmIndexSize = maxHelmIndexSize
	MaxHelmChartFile = maxHelmChartFile
)
