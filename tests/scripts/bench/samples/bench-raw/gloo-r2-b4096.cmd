BUILD/bench/gloo_allreduce --ranks 2 --bytes 4096 --iterations 3 --warmup 1
1
