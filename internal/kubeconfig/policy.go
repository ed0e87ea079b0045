package kubeconfig

// Policy says which insecure kubeconfig features a controller accepts from
// tenants. The zero Policy is the safe default. Fields that name files on
// the controller's disk are refused whatever the Policy.
type Policy struct {
	// AllowExec accepts exec credential plugins and auth-provider plugins,
	// which run code in the controller on the tenant's behalf.
	AllowExec bool
	// AllowInsecureTLS accepts insecure-skip-tls-verify and http:// servers.
	AllowInsecureTLS bool
}
