"""The command starts light (issue 49): what every ``schedlab`` process imports before its command — ``schedlab.cli``,
and the modules of the sub-apps it mounts when the command is theirs or the whole help is asked for — loads none of
the heavy libraries nor the services stack; each command imports what it runs. The start-up times themselves are
measured by ``benchmarks/bench_startup.py``, not here."""

from __future__ import annotations

import subprocess
import sys

# what a command's own body loads, never `import schedlab.cli`
HEAVY = (
    "numpy", "pandas", "pyarrow", "pydantic", "scipy", "matplotlib", "yaml", "highspy", "asyncio", "aiohttp", "aio_pika",
    "schedlab.engine", "schedlab.run_config", "schedlab.schedulers", "schedlab.services.dst", "schedlab.services.assembly",
    "schedlab.services.clusterfile",
)  # fmt: skip
# the other packages' sub-apps: loaded for `schedlab --help` and their own commands, not for this module's commands
SUB_APPS = (
    "schedlab.edge.cli", "schedlab.grid.cli", "schedlab.locality.cli", "schedlab.services.cli", "schedlab.services.dst_cli",
    "schedlab.services.jobs_cli",
)  # fmt: skip
# what a simulation itself needs
SIMULATOR = ("numpy", "pydantic", "schedlab.engine", "schedlab.run_config", "schedlab.schedulers")


def loaded_after(code: str) -> list[str]:
    """The modules of HEAVY and SUB_APPS loaded once ``code`` has run in a fresh interpreter."""
    probe = f"{code}\nimport sys\nprint(sorted(m for m in {HEAVY + SUB_APPS!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return eval(out.stdout.strip().splitlines()[-1])  # a list of str, printed by the probe


def test_importing_the_cli_loads_nothing_heavy() -> None:
    assert loaded_after("import schedlab.cli") == []


def test_help_loads_nothing_heavy() -> None:
    assert sorted(loaded_after("from schedlab.cli import main\nmain(['--help'])")) == sorted(SUB_APPS)


def test_a_commands_help_loads_only_what_typer_does() -> None:
    # typer itself converts a command's parameters with pydantic (0.29: typer._adapters), once the command is chosen
    code = "from schedlab.cli import main\nmain(['dst', '--help'])\nmain(['cluster', 'up', '--help'])\nmain(['trace', 'info', '--help'])"
    assert [m for m in loaded_after(code) if m not in ("pydantic", *SUB_APPS)] == []


def test_simulate_loads_only_what_the_simulator_needs(tmp_path) -> None:
    # pandas (and the pyarrow it loads) only for --out's tables; never the services, plots or solvers
    trace = tmp_path / "one.tr"
    trace.write_text("0 1 10 10\n")
    args = ["simulate", "-t", str(trace), "-w", "1000", "-q", "--summary-json", str(tmp_path / "s.json")]
    loaded = loaded_after(f"from schedlab.cli import main\nassert main({args!r}) == 0")
    assert [m for m in loaded if m not in SIMULATOR] == []
    assert '"tasks": 1' in (tmp_path / "s.json").read_text()
