BUILD/sim/launcher/netagg-local --workers 2 --target switch-sim --dtype fp32 --count 1024 --iterations 3 --json
0
