ip netns exec nab1-wR netagg-allreduce --rank R --transport dpdk --count 16384 --iterations 4 --json (NETAGG_DPDK_VDEVS=net_af_xdp0,iface=dp0)
0
