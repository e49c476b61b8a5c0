"""Data-center schedulers, one module or folder each, and the registry that names them."""

from schedlab.schedulers.base import Scheduler, SchedulerContext, SchedulerParams
from schedlab.schedulers.registry import available, get, parse_params

__all__ = ["Scheduler", "SchedulerContext", "SchedulerParams", "available", "get", "parse_params"]
