BUILD/bench/gloo_allreduce --ranks 2 --bytes 65536 --iterations 3 --warmup 1
0
