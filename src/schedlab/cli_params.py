"""Scheduler parameters as command-line flags, read from each scheduler's own ``Params`` model.

``schedlab simulate --gms 3 --worker-choice random`` works because Megha's
``Params`` has ``gms`` and ``worker_choice``: every parameter of the chosen
scheduler is a flag (``--KEY VALUE`` or ``--KEY=VALUE``; booleans as
``--KEY`` / ``--no-KEY``; lists comma-separated, ``--shares 0.7,0.3``; other
values read as JSON when they parse, else as text), validated by the
scheduler's model. So a new scheduler — a plugin too — gets its flags, and
its lines in ``--help``, for free.

How: :class:`SchedulerParamsCommand` lets the options the command does not
declare through (click's ``ignore_unknown_options``) and reads them against
the scheduler's model once the scheduler is known; its help epilog lists
every scheduler's parameters, built only when help is printed. Declaring the
flags as real options instead would load every scheduler's module on every
CLI start and depend on the option classes of one typer release.
"""

from __future__ import annotations

import json
import typing
from typing import Any

from typer.core import TyperCommand

from schedlab.cliutil import json_or_text
from schedlab.errors import InputError
from schedlab.run_fields import option_name


def _is_list(annotation: Any) -> bool:
    args = typing.get_args(annotation) or (annotation,)
    return any(typing.get_origin(a) is list or a is list for a in args)


def _choices(annotation: Any) -> tuple[str, ...]:
    if typing.get_origin(annotation) is typing.Literal:
        return tuple(str(a) for a in typing.get_args(annotation))
    return ()


def scheduler_fields() -> dict[str, dict[str, Any]]:
    """parameter name → {scheduler name: pydantic field}, over every available scheduler."""
    # the simulator loads only when a command reads scheduler flags
    from schedlab.schedulers import registry

    out: dict[str, dict[str, Any]] = {}
    for name in registry.available():
        for key, field in registry.get(name).Params.model_fields.items():
            out.setdefault(key, {})[name] = field
    return out


def _describe(field: Any) -> str:
    text = field.description or ""
    choices = _choices(field.annotation)
    if choices:
        text = f"{text} ({'|'.join(choices)})" if text else "|".join(choices)
    return text


def _default(field: Any) -> str:
    value = field.get_default(call_default_factory=True)
    return "" if value is None else json.dumps(value) if isinstance(value, bool | list) else str(value)


def epilog() -> str:
    """Every scheduler parameter as a flag, with the schedulers that take it and their defaults (one paragraph each)."""
    lines = ["Scheduler parameters — flags of their own (or --param KEY=VALUE), for the schedulers named:"]
    for key, by_scheduler in sorted(scheduler_fields().items()):
        groups: dict[str, dict[str, list[str]]] = {}  # description -> default -> schedulers
        for sched, field in by_scheduler.items():
            groups.setdefault(_describe(field), {}).setdefault(_default(field), []).append(sched)
        parts = []
        for text, defaults in groups.items():
            who = ", ".join(", ".join(names) + (f" (default {d})" if d else "") for d, names in defaults.items())
            parts.append(f"{who}: {text}")
        flag = option_name(key)
        if all(f.annotation is bool for f in by_scheduler.values()):
            flag = f"{flag}/--no-{flag[2:]}"
        lines.append(f"{flag}  " + "; ".join(parts))
    return "\n\n".join(lines)


def parse_flags(scheduler: str, args: list[str]) -> dict[str, Any]:
    """The scheduler's parameters given as flags in ``args`` (what the command's own options left)."""
    # the simulator loads only when a command reads scheduler flags
    from schedlab.schedulers import registry

    fields = registry.get(scheduler).Params.model_fields
    out: dict[str, Any] = {}
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if not token.startswith("--") or token == "--":
            raise InputError(token, "unexpected argument (options are --NAME VALUE)")
        name, eq, raw = token[2:].partition("=")
        key = name.replace("-", "_")
        negated = key.startswith("no_") and key[3:] in fields and fields[key[3:]].annotation is bool
        if negated:
            key = key[3:]
        if key not in fields:
            known = key in scheduler_fields() or key.removeprefix("no_") in scheduler_fields()
            theirs = ", ".join(option_name(k) for k in fields) or "none"
            problem = f"not a parameter of scheduler {scheduler!r}" if known else "no such option"
            raise InputError(f"--{name}", f"{problem} (its parameters: {theirs})" if known else f"{problem} (scheduler {scheduler!r} takes {theirs}; see --help)")
        if key in out:
            raise InputError(f"--{name}", "given twice")
        if fields[key].annotation is bool and not eq:
            out[key] = not negated
            continue
        if not eq:
            if i >= len(args):
                raise InputError(f"--{name}", "needs a value")
            raw = args[i]
            i += 1
        out[key] = parse_flag(fields[key].annotation, raw)
    return out


def parse_flag(annotation: Any, raw: str) -> Any:
    """A flag's text as the value the parameter model validates."""
    if _is_list(annotation) and not raw.lstrip().startswith("["):
        return [json_or_text(x.strip()) for x in raw.split(",") if x.strip()]
    return json_or_text(raw)


class SchedulerParamsCommand(TyperCommand):
    """A typer command whose options it does not declare are the chosen scheduler's parameters.

    Use with ``context_settings={"ignore_unknown_options": True, "allow_extra_args": True}``;
    the command reads ``ctx.args`` with :func:`parse_flags`.
    """

    @property
    def epilog(self) -> str:
        return epilog()

    @epilog.setter
    def epilog(self, _value: str | None) -> None:
        pass  # the epilog is always the scheduler parameters'


FLAG_CONTEXT = {"ignore_unknown_options": True, "allow_extra_args": True}


def merge_params(from_param: dict[str, Any], flags: dict[str, Any]) -> dict[str, Any]:
    """``--param`` values and flags as one dict; a parameter given both ways is refused."""
    for key in flags:
        if key in from_param:
            raise InputError(option_name(key), f"given twice (also as --param {key}=…)")
    return {**from_param, **flags}


def flag_error(e: InputError, flags: dict[str, Any]) -> InputError:
    """A parameter-model error named after the flag it came from (``--gms``, not ``param gms``)."""
    key = (e.where or "").removeprefix("param ").split(".")[0]
    return InputError(option_name(key), e.problem) if key in flags else e
