BUILD/bench/fpga_bench --model rtl --dtype fp32 --packets 64 --baseline
0
