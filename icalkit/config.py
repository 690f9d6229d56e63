"""Typed configs: nested dataclasses loaded from YAML with dotted ``key=value`` overrides.

Every stage declares a dataclass (fields with type hints and defaults). :func:`load_config`
reads a YAML file, applies command-line overrides such as ``env.size=160 demos.noise=0.3`` and
builds the dataclass, checking every key and type on the way. Unknown keys and wrong types raise
:class:`ConfigError` naming the offending key, before anything expensive is loaded. A dataclass
may define ``validate(self)`` for cross-field checks; it is called after construction, and can
tell keys the user wrote from defaults with :func:`explicit_keys` (e.g. to refuse a key of a
shared section that the command takes from elsewhere, :func:`refuse_keys`).

The configs shipped with icalkit live in ``configs/`` beside the package (:data:`SHIPPED_CONFIGS`),
found from the package's location, never from the working directory.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from pathlib import Path
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

import yaml

T = TypeVar("T")
SHIPPED_CONFIGS = Path(__file__).resolve().parents[1] / "configs"
_EXPLICIT = "_config_explicit_keys"


class ConfigError(ValueError):
    """A config file or override is malformed (unknown key, wrong type, bad value)."""


def parse_override(text: str) -> tuple[list[str], Any]:
    """Split ``a.b.c=value`` into (["a", "b", "c"], value parsed as YAML scalar/list)."""
    if "=" not in text:
        raise ConfigError(f"override {text!r} is not of the form key=value")
    key, raw = text.split("=", 1)
    key = key.strip().lstrip("-")
    if not key or any(not part for part in key.split(".")):
        raise ConfigError(f"override {text!r} has an empty key")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise ConfigError(f"override {text!r}: value is not valid YAML ({exc})") from exc
    return key.split("."), value


def apply_overrides(data: dict, overrides: list[str]) -> dict:
    """Return a copy of ``data`` with dotted overrides applied (creating nested dicts)."""
    data = _deep_copy(data)
    for text in overrides:
        path, value = parse_override(text)
        node = data
        for part in path[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"override {text!r}: {part!r} is a value, not a section")
            node = child
        node[path[-1]] = value
    return data


def _deep_copy(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _deep_copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_deep_copy(v) for v in obj]
    return obj


def _is_optional(tp: Any) -> tuple[bool, Any]:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) < len(get_args(tp)) and len(args) == 1:
            return True, args[0]
    return False, tp


_YAML11_FLOAT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$")


def _coerce(value: Any, tp: Any, where: str) -> Any:
    """Check ``value`` against type hint ``tp`` (light coercion: int→float, '1e-4'→float, list→tuple)."""
    optional, inner = _is_optional(tp)
    if value is None:
        if optional or tp is Any:
            return None
        raise ConfigError(f"{where}: null is not allowed (expected {_type_name(tp)})")
    tp = inner
    if tp is Any:
        return value
    if dataclasses.is_dataclass(tp):
        if dataclasses.is_dataclass(value):
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a section (mapping), got {value!r}")
        return from_dict(tp, value, prefix=where)
    origin = get_origin(tp)
    if origin is typing.Literal:
        if value not in get_args(tp):
            raise ConfigError(f"{where}: {value!r} is not one of {list(get_args(tp))}")
        return value
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        args = get_args(tp)
        item_tp = args[0] if args else Any
        items = [_coerce(v, item_tp, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        _, val_tp = get_args(tp) or (Any, Any)
        return {k: _coerce(v, val_tp, f"{where}.{k}") for k, v in value.items()}
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp is float and isinstance(value, str) and _YAML11_FLOAT.match(value.strip()):
        return float(value)  # YAML 1.1 reads 1e-4 (no dot) as a string
    if tp is bool and not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true/false, got {value!r}")
    if tp is int and isinstance(value, bool):
        raise ConfigError(f"{where}: expected an integer, got {value!r}")
    if isinstance(tp, type) and not isinstance(value, tp):
        raise ConfigError(f"{where}: expected {_type_name(tp)}, got {type(value).__name__} {value!r}")
    return value


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))


def from_dict(cls: type[T], data: dict, prefix: str = "") -> T:
    """Build dataclass ``cls`` from a mapping, rejecting unknown keys and wrong types."""
    hints = get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        where = f" in section {prefix!r}" if prefix else ""
        raise ConfigError(f"unknown config key(s) {unknown}{where}; known keys: {sorted(fields)}")
    kwargs = {}
    for name, value in data.items():
        where = f"{prefix}.{name}" if prefix else name
        kwargs[name] = _coerce(value, hints[name], where)
    try:
        obj = cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{prefix or cls.__name__}: {exc}") from exc
    try:
        object.__setattr__(obj, _EXPLICIT, frozenset(data))
    except AttributeError:  # a slots dataclass: explicit_keys() is empty for it
        pass
    validate = getattr(obj, "validate", None)
    if callable(validate):
        try:
            validate()
        except ConfigError:
            raise
        except ValueError as exc:
            raise ConfigError(f"{prefix or cls.__name__}: {exc}") from exc
    return obj


def explicit_keys(section: Any) -> frozenset[str]:
    """Keys of a config section that its YAML file or the command line set (not defaults).

    Empty for a section built in code rather than by :func:`load_config` / :func:`from_dict`.
    """
    return getattr(section, _EXPLICIT, frozenset())


def refuse_keys(section: Any, prefix: str, keys: dict[str, str]) -> None:
    """Raise ValueError if the user set one of ``keys`` in ``section`` to other than its default.

    For a shared section whose key this command takes from elsewhere: ``keys`` maps each such
    key to what to set instead, so no key is silently ignored. A key given at its default value
    changes nothing and passes, so a run's saved ``config.yaml`` (every key written) loads back.
    """
    defaults = {f.name: f.default for f in dataclasses.fields(section) if f.default is not dataclasses.MISSING}
    for key, instead in keys.items():
        if key in explicit_keys(section) and getattr(section, key) != defaults.get(key, dataclasses.MISSING):
            raise ValueError(f"{prefix}.{key} is not read by this command; set {instead} instead")


def shipped_config(name: str) -> Path | None:
    """``configs/<name>.yaml`` shipped with icalkit (found from the package), or None."""
    path = SHIPPED_CONFIGS / f"{name}.yaml"
    return path if path.is_file() else None


def to_dict(cfg: Any) -> dict:
    """Plain dict of a config dataclass (for logging and result files)."""
    return dataclasses.asdict(cfg)


def read_yaml_mapping(path: str | Path) -> dict:
    """The mapping at the top of a YAML file ({} for an empty file); ConfigError naming the problem."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    try:
        loaded = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}") from exc
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"config file {path} must hold a mapping at the top level")
    return loaded


def load_config(cls: type[T], path: str | Path | None = None, overrides: list[str] | None = None) -> T:
    """Load ``cls`` from an optional YAML file plus dotted overrides; validate everything."""
    data = read_yaml_mapping(path) if path is not None else {}
    data = apply_overrides(data, overrides or [])
    return from_dict(cls, data)
