// Command kube is one multi-call binary for the Kubernetes components netrun's lab runs, as
// hyperkube was: the name it is called by (argv[0], or the first argument) picks the
// component. One binary links once and shares its packages on disk.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	_ "time/tzdata" // CronJob time zones, as kube-apiserver's own main

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"

	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

var commands = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kubelet":                 func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
}

func main() {
	name := filepath.Base(os.Args[0])
	if _, ok := commands[name]; !ok && name != "kubectl" && len(os.Args) > 1 {
		name = os.Args[1]
		os.Args = os.Args[1:]
	}
	if name == "kubectl" {
		command := kubectlcmd.NewDefaultKubectlCommand()
		if err := cli.RunNoErrOutput(command); err != nil {
			util.CheckErr(err)
		}
		return
	}
	make, ok := commands[name]
	if !ok {
		fmt.Fprintln(os.Stderr, "usage: kube {kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kubectl} ARGS")
		os.Exit(2)
	}
	os.Exit(cli.Run(make()))
}
