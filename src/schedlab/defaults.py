"""The defaults of a run that several layers share — the papers' conventions — in a module with no dependencies.

Lower layers import their constant from here, and the run configuration
(:mod:`schedlab.run_config`) and the CLI read them all without loading numpy.
"""

# Task constraints are drawn with random.Random(42) in the papers' simulators (schedlab.workload.constraints).
PAPER_CONSTRAINT_SEED = 42

# One-way latency per message: ND of the papers' simulators, in seconds (schedlab.sim.runtime).
DEFAULT_LATENCY = 0.0005

# How generated workers get machine constraints (schedlab.cluster.generate).
MACHINE_MODELS = ("independent", "reference")

# A multi-resource worker of the Megha paper (Section V-B): 64 cores and 16 GB.
MULTI_RESOURCES = ("cores", "memory_mb")
DEFAULT_CAPACITY = (64.0, 16384.0)

# Task resource requests in multi-resource mode (schedlab.workload.requests).
DEFAULT_REQUESTS = "choice:1x256@0.4,2x512@0.3,4x1024@0.2,8x2048@0.1"

# A job is short when its trace mean task duration is below this many seconds: the papers' simulators' cutoff
# (docs/authors-simulators.md#short-and-long-jobs). The summary splits JRT delay by it for every scheduler.
SHORT_JOB_CUTOFF = 90.5811
