# SPDX-License-Identifier: Apache-2.0
"""The machine and the build a run was measured on, for the summaries."""
import os
import subprocess

from . import parse


def cpu_model(cpuinfo="/proc/cpuinfo"):
    """The CPU's model name from /proc/cpuinfo, or None."""
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def git(repo, *args):
    """git's output in REPO, stripped, or None (no git, not a repository)."""
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True,
                              cwd=repo).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def compiler_version(build):
    """The first line of the C++ compiler's --version for BUILD, its path when that fails, or None
    when the cache names none."""
    compiler = parse.cmake_cache(build, "CMAKE_CXX_COMPILER")
    if not compiler:
        return None
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=True)
        return out.stdout.splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return compiler


def load_average():
    """The load averages over 1, 5 and 15 minutes."""
    return list(os.getloadavg())
