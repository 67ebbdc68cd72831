# SPDX-License-Identifier: Apache-2.0
"""netagg's torch.distributed backend.

    import netagg_torch                      # registers the backend "netagg"
    torch.distributed.init_process_group("netagg")

all_reduce (ReduceOp SUM on CPU float32, int32 and bfloat16 tensors) goes through netagg's
in-network aggregation; the other collectives go through a Gloo process group made alongside on
the same store. The job, the aggregator and netagg's settings come from NETAGG_* variables
(docs/configuration.md); NETAGG_LOCAL_AGGREGATOR=switch|fpga-hls|fpga-rtl has rank 0 start an
aggregator daemon on this machine and write the job (netagg_torch.local). docs/pytorch.md has
the details.
"""

import os

import torch.distributed as dist

try:
    from ._C import ProcessGroupNetagg
except ImportError as e:  # the package from the source tree, or a build for another Python
    raise ImportError(
        "netagg_torch: the extension module _C is missing or does not load "
        f"({e}). Build it (cmake --build BUILD --target netagg-torch) and put "
        "BUILD/torch/python on PYTHONPATH; run the Python that has torch (/usr/bin/python3 on "
        "Debian)") from e

from . import local

__all__ = ["ProcessGroupNetagg", "create_process_group", "local"]

# Where Config::from_env looks for the rank, in its order.
_RANK_VARIABLES = ("NETAGG_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "RANK")


def create_process_group(store, rank, world_size, timeout):
    """The backend's constructor, as torch.distributed calls it."""
    local.prepare(store, rank, world_size, timeout)
    # A group made with rank= and world_size= but no launcher has no rank variable: the group's.
    if not any(v in os.environ for v in _RANK_VARIABLES):
        os.environ["NETAGG_RANK"] = str(rank)
    return ProcessGroupNetagg(store, rank, world_size, timeout)


if not hasattr(dist.Backend, "NETAGG"):
    dist.Backend.register_backend("netagg", create_process_group)
