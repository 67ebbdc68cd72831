BUILD/sim/launcher/netagg-local --workers 2 --target switch-sim --dtype fp32 --count 16384 --iterations 5 --json
0
