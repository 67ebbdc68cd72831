ip netns exec nab1-wR netagg-allreduce --rank R --transport dpdk --count 16384 --iterations 4 --json
0
