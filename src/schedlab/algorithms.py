"""One registry format for the algorithms of every domain: named entries with a validated parameter model.

Each domain that solves instances by named algorithms (:mod:`schedlab.locality`'s
DynDL family, :mod:`schedlab.edge`'s CRED family, …) keeps one
:class:`AlgorithmRegistry` of :class:`Algorithm` entries. An entry carries its
name (used on the command line and in JSON/CSV), ``label`` (the paper's
spelling, for tables and plots), a one-line ``summary``, a ``kind`` (the
domain's grouping, e.g. ``online``/``offline``/``exact``), its ``Params`` — a
frozen pydantic model whose fields (with types, defaults and descriptions) are
the algorithm's parameters, unknown names refused — and the function that runs
it, ``run(instance, seed, params)``.

Why: before, every domain had its own format (parameter tuples here, a dict of
callables with a special-cased exact solver there, different argument orders),
so callers, CLIs and error messages differed for no reason. With one format, a
name is looked up, parameters are validated and errors are worded the same way
everywhere (``param <field>: <problem>``, as for the data-center schedulers),
and a CLI can list any domain's algorithms and parameters from the models.

The data-center schedulers (:mod:`schedlab.schedulers`) keep their own
class-based registry, because third-party schedulers plug in through the
``schedlab.schedulers`` entry-point group and each one is a class the
simulation instantiates; their ``Params`` are the same kind of model (frozen,
``extra="forbid"``, described fields).

This module is deliberately low-level: it imports only pydantic, the standard
library and :mod:`schedlab.errors`, so any domain can build on it.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from schedlab.errors import InputError

__all__ = ["Algorithm", "AlgorithmParam", "AlgorithmParams", "AlgorithmRegistry"]

InstanceT = TypeVar("InstanceT")
OutcomeT = TypeVar("OutcomeT")


class AlgorithmParams(BaseModel):
    """Base of every algorithm's parameters: frozen, unknown fields are errors, values are not coerced.

    Strict validation: a number must be a number (a ``float`` field takes an
    int, nothing takes a bool or a string of digits), a ``bool`` must be a
    bool. An algorithm without parameters uses this class itself.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


@dataclass(frozen=True)
class AlgorithmParam:
    """One parameter as a CLI or a document shows it."""

    name: str
    type: str  # e.g. "float", "int | None", "random | first"
    default: Any
    description: str


@dataclass(frozen=True)
class Algorithm(Generic[InstanceT, OutcomeT]):
    """A registry entry: what an algorithm is called, what it is, its parameters, and how to run it.

    ``run(instance, seed, params)`` receives an instance of ``Params``, already
    validated; ``seeded`` says whether the algorithm draws random numbers from
    ``seed`` (the others ignore it).
    """

    name: str
    label: str
    kind: str
    summary: str
    run: Callable[[InstanceT, int, Any], OutcomeT]
    Params: type[AlgorithmParams] = AlgorithmParams
    seeded: bool = False

    def parameters(self) -> tuple[AlgorithmParam, ...]:
        """The parameters in declaration order, with a readable type, the default and the description."""
        return tuple(
            AlgorithmParam(name, _type_text(f.annotation), f.get_default(call_default_factory=True), f.description or "")
            for name, f in self.Params.model_fields.items()
        )


class AlgorithmRegistry(Generic[InstanceT, OutcomeT]):
    """The algorithms of one domain, in a fixed order: look up, validate parameters, run.

    ``where`` is the field named by an unknown-name error (the CLI option that
    takes one algorithm).
    """

    def __init__(self, domain: str, algorithms: Iterable[Algorithm[InstanceT, OutcomeT]], *, where: str = "--algorithm") -> None:
        self.domain = domain
        self.where = where
        self._entries: dict[str, Algorithm[InstanceT, OutcomeT]] = {}
        for algo in algorithms:
            if algo.name in self._entries:
                raise ValueError(f"{domain}: algorithm {algo.name!r} registered twice")
            if not (isinstance(algo.Params, type) and issubclass(algo.Params, AlgorithmParams)):
                raise TypeError(f"{domain}: {algo.name}.Params must be a subclass of AlgorithmParams")
            self._entries[algo.name] = algo

    def __repr__(self) -> str:
        return f"AlgorithmRegistry({self.domain!r}, {list(self._entries)})"

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> tuple[str, ...]:
        """Every algorithm's name, in registration order."""
        return tuple(self._entries)

    def entries(self) -> tuple[Algorithm[InstanceT, OutcomeT], ...]:
        """Every entry, in registration order."""
        return tuple(self._entries.values())

    def get(self, name: str) -> Algorithm[InstanceT, OutcomeT]:
        """The entry called ``name``; an unknown name is an :class:`InputError` listing the choices."""
        algo = self._entries.get(name)
        if algo is None:
            raise InputError(self.where, f"unknown algorithm {name!r} (choose from {', '.join(self._entries)})")
        return algo

    def parse_params(self, name: str, raw: Mapping[str, Any] | AlgorithmParams | None) -> AlgorithmParams:
        """Validate ``raw`` against the ``Params`` of ``name`` (defaults filled in).

        ``raw`` may already be an instance of that model. The first problem
        becomes one :class:`InputError` line ``param <field>: <problem>``.
        """
        algo = self.get(name)
        if isinstance(raw, AlgorithmParams):
            if type(raw) is algo.Params:
                return raw
            raise InputError("params", f"{type(raw).__name__} are not the parameters of {self.domain} algorithm {name!r}")
        if raw is not None and not isinstance(raw, Mapping):
            raise InputError("params", f"expected parameter names and values, got {type(raw).__name__}")
        try:
            return algo.Params.model_validate(dict(raw or {}))
        except ValidationError as e:
            raise params_error(e, algo.Params, f"{self.domain} algorithm {name!r}") from None

    def run(self, name: str, instance: InstanceT, *, seed: int = 0, params: Mapping[str, Any] | AlgorithmParams | None = None) -> OutcomeT:
        """Run algorithm ``name`` on ``instance`` with validated ``params``.

        An :class:`InputError` the algorithm raises about one of its parameters
        (``where`` = the field name) is reworded as ``param <field>: …``.
        """
        algo = self.get(name)
        p = self.parse_params(name, params)
        try:
            return algo.run(instance, seed, p)
        except InputError as e:
            if e.where is not None and e.where in algo.Params.model_fields:
                raise InputError(f"param {e.where}", e.problem) from None
            raise


def _type_text(annotation: Any) -> str:
    """``float``, ``int | None``, ``random | first`` (a Literal's values) …"""
    if annotation is None or annotation is type(None):
        return "None"
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " | ".join(str(v) for v in typing.get_args(annotation))
    if origin is typing.Union or origin is types.UnionType:
        return " | ".join(_type_text(a) for a in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _type_text(typing.get_args(annotation)[0])
    return getattr(annotation, "__name__", str(annotation))


def params_error(e: ValidationError, model: type[BaseModel], owner: str) -> InputError:
    """The first problem of a parameter model's validation as one line, ``param <field>: <problem>``.

    ``owner`` names whose parameters they are (``scheduler 'megha'``,
    ``locality algorithm 'delay'``); an unknown name lists the known ones.
    """
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err["loc"]) or "params"
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        fields = ", ".join(model.model_fields) or "none"
        msg = f"unknown parameter for {owner} (its parameters: {fields})"
    elif "input" in err and err["type"] != "missing" and err["loc"]:  # a check of several fields names them itself
        msg = f"{msg}, got {err['input']!r}"
    return InputError(f"param {loc}", msg)
