# SPDX-License-Identifier: Apache-2.0
"""What the benchmark scripts of scripts/bench/ do in Python: read the measured programs' output,
compute the medians and ratios, write the JSON summaries, print the tables and draw the plots.

The scripts run the programs and call this package for the rest, as
`python3 scripts/bench/netagg_bench COMMAND ...` (`--help` lists the commands; cli.py).

  parse     what the programs print (JSON lines, Google Benchmark, iperf3, the bench's raw files)
  stats     medians, the slowest rank, ratios, shares of a link
  machine   the machine and the build a run was measured on
  inputs    files written for the programs (jobs, scenario variants)
  summary   the JSON document of each benchmark
  tables    the text tables printed after a run
  plots     the figures (matplotlib)
"""
