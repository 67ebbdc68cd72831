BUILD/bench/codec_bench --benchmark_format=json --benchmark_min_time=0.05
0
