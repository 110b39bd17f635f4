// Command flannel is the lab's Flannel CNI plugin: the meta-plugin github.com/flannel-io/cni-plugin
// provides, which the Go module proxy does not serve (403), written again from its documented
// behaviour with the standard library only, so the wrapper module needs no new dependency.
//
// On ADD it reads flanneld's subnet file (FLANNEL_NETWORK, FLANNEL_SUBNET, FLANNEL_MTU,
// FLANNEL_IPMASQ), fills the delegate's config the way the upstream plugin does (type bridge,
// isGateway, mtu and ipMasq unless the delegate sets them, host-local IPAM over the node's
// lease with a route to the whole flannel network), saves it under dataDir by container id
// and runs the delegate from CNI_PATH with it. DEL runs the delegate with the saved config and
// removes it (a missing one is success, as the CNI spec asks). CHECK, STATUS and GC succeed.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

const (
	defaultSubnetFile = "/run/flannel/subnet.env"
	defaultDataDir    = "/var/lib/cni/flannel"
)

var supported = []string{"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}

type netConf struct {
	CNIVersion    string         `json:"cniVersion"`
	Name          string         `json:"name"`
	SubnetFile    string         `json:"subnetFile"`
	DataDir       string         `json:"dataDir"`
	Delegate      map[string]any `json:"delegate"`
	IPAM          map[string]any `json:"ipam"`
	RuntimeConfig map[string]any `json:"runtimeConfig"`
}

type subnetEnv struct {
	networks []string
	subnet   string
	mtu      uint64
	ipMasq   bool
}

// cniError is the error result the CNI spec defines, printed on stdout.
type cniError struct {
	CNIVersion string `json:"cniVersion"`
	Code       uint   `json:"code"`
	Msg        string `json:"msg"`
	Details    string `json:"details,omitempty"`
}

func readSubnetEnv(path string) (*subnetEnv, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	env := &subnetEnv{}
	seen := map[string]bool{}
	scan := bufio.NewScanner(f)
	for scan.Scan() {
		key, value, ok := strings.Cut(strings.TrimSpace(scan.Text()), "=")
		if !ok {
			continue
		}
		seen[key] = true
		switch key {
		case "FLANNEL_NETWORK":
			for _, cidr := range strings.Split(value, ",") {
				if _, nw, err := net.ParseCIDR(cidr); err == nil {
					env.networks = append(env.networks, nw.String())
				} else {
					return nil, fmt.Errorf("%s: FLANNEL_NETWORK: %v", path, err)
				}
			}
		case "FLANNEL_SUBNET":
			_, sn, err := net.ParseCIDR(value)
			if err != nil {
				return nil, fmt.Errorf("%s: FLANNEL_SUBNET: %v", path, err)
			}
			env.subnet = sn.String()
		case "FLANNEL_MTU":
			if env.mtu, err = strconv.ParseUint(value, 10, 32); err != nil {
				return nil, fmt.Errorf("%s: FLANNEL_MTU: %v", path, err)
			}
		case "FLANNEL_IPMASQ":
			env.ipMasq = value == "true"
		}
	}
	if err := scan.Err(); err != nil {
		return nil, err
	}
	var missing []string
	for _, key := range []string{"FLANNEL_NETWORK", "FLANNEL_SUBNET", "FLANNEL_MTU", "FLANNEL_IPMASQ"} {
		if !seen[key] {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s is missing %s", path, strings.Join(missing, ", "))
	}
	return env, nil
}

// delegateConf is the upstream plugin's doCmdAdd: the delegate's config from ours and the lease.
func delegateConf(n *netConf, env *subnetEnv) (map[string]any, error) {
	d := n.Delegate
	if d == nil {
		d = map[string]any{}
	}
	if t, ok := d["type"]; ok {
		if _, isString := t.(string); !isString {
			return nil, errors.New("'delegate' must have a string 'type'")
		}
	} else {
		d["type"] = "bridge"
	}
	for _, key := range []string{"name", "ipam"} {
		if _, ok := d[key]; ok {
			return nil, fmt.Errorf("'delegate' must not have '%s': flannel sets it", key)
		}
	}
	d["name"] = n.Name
	if n.CNIVersion != "" {
		d["cniVersion"] = n.CNIVersion
	}
	if _, ok := d["ipMasq"]; !ok {
		d["ipMasq"] = !env.ipMasq // flanneld masquerades itself, or the bridge must
	}
	if _, ok := d["mtu"]; !ok {
		d["mtu"] = env.mtu
	}
	if _, ok := d["isGateway"]; !ok && d["type"] == "bridge" {
		d["isGateway"] = true
	}
	if n.RuntimeConfig != nil {
		d["runtimeConfig"] = n.RuntimeConfig
	}
	ipam := n.IPAM
	if ipam == nil {
		ipam = map[string]any{}
	}
	if _, ok := ipam["type"]; !ok {
		ipam["type"] = "host-local"
	}
	ipam["ranges"] = [][]map[string]any{{{"subnet": env.subnet}}}
	var routes []any
	if given, ok := ipam["routes"].([]any); ok {
		routes = given
	}
	for _, nw := range env.networks {
		routes = append(routes, map[string]any{"dst": nw})
	}
	ipam["routes"] = routes
	d["ipam"] = ipam
	return d, nil
}

// delegate runs the plugin `kind` from CNI_PATH with `conf` on stdin and this plugin's
// environment (CNI_COMMAND and the rest), its result and errors passed through.
func delegate(kind string, conf []byte) error {
	var found string
	for _, dir := range filepath.SplitList(os.Getenv("CNI_PATH")) {
		if candidate := filepath.Join(dir, kind); isExecutable(candidate) {
			found = candidate
			break
		}
	}
	if found == "" {
		return fmt.Errorf("delegate plugin %q not in CNI_PATH %q", kind, os.Getenv("CNI_PATH"))
	}
	cmd := exec.Command(found)
	cmd.Stdin = bytes.NewReader(conf)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode()) // the delegate printed its own error result
		}
		return err
	}
	return nil
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
}

func load(stdin []byte) (*netConf, error) {
	n := &netConf{SubnetFile: defaultSubnetFile, DataDir: defaultDataDir}
	if err := json.Unmarshal(stdin, n); err != nil {
		return nil, fmt.Errorf("flannel's netconf: %v", err)
	}
	return n, nil
}

func scratch(n *netConf) (string, error) {
	id := os.Getenv("CNI_CONTAINERID")
	if id == "" || strings.ContainsAny(id, "/\\") || id == "." || id == ".." {
		return "", fmt.Errorf("CNI_CONTAINERID %q is not a container id", id)
	}
	return filepath.Join(n.DataDir, id), nil
}

func add(n *netConf) error {
	env, err := readSubnetEnv(n.SubnetFile)
	if err != nil {
		return fmt.Errorf("flannel's subnet file: %v (is flanneld running on this node?)", err)
	}
	d, err := delegateConf(n, env)
	if err != nil {
		return err
	}
	conf, err := json.Marshal(d)
	if err != nil {
		return err
	}
	path, err := scratch(n)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(n.DataDir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(path, conf, 0o600); err != nil { // for DEL, when the lease is gone
		return err
	}
	return delegate(d["type"].(string), conf)
}

func del(n *netConf) error {
	path, err := scratch(n)
	if err != nil {
		return err
	}
	conf, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // already removed: success, as the spec asks
	} else if err != nil {
		return err
	}
	var d struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(conf, &d) != nil || d.Type == "" {
		return os.Remove(path) // unreadable: nothing to undo by it
	}
	if err := delegate(d.Type, conf); err != nil {
		return err
	}
	return os.Remove(path)
}

func run() error {
	command := os.Getenv("CNI_COMMAND")
	if command == "VERSION" {
		return json.NewEncoder(os.Stdout).Encode(map[string]any{
			"cniVersion": "1.1.0", "supportedVersions": supported,
		})
	}
	var stdin bytes.Buffer
	if _, err := stdin.ReadFrom(os.Stdin); err != nil {
		return err
	}
	n, err := load(stdin.Bytes())
	if err != nil {
		return err
	}
	switch command {
	case "ADD":
		return add(n)
	case "DEL":
		return del(n)
	case "CHECK", "STATUS", "GC":
		return nil
	}
	return fmt.Errorf("CNI_COMMAND %q: want ADD, DEL, CHECK, STATUS, GC or VERSION", command)
}

func main() {
	if err := run(); err != nil {
		_ = json.NewEncoder(os.Stdout).Encode(cniError{CNIVersion: "1.0.0", Code: 999, Msg: err.Error()})
		os.Exit(1)
	}
}
