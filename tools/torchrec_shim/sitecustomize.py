"""Lets `plan_to_torchrec.py --check-torchrec` run TorchRec's sharding helpers where TorchRec cannot be
installed: Debian's python3-torch (1.13) on Python 3.11, with a TorchRec source tree of that era (v0.3.2)
and without fbgemm_gpu. Put this directory and the TorchRec tree on PYTHONPATH (docs/torchrec.md). Never
use it for training: the fbgemm_gpu it provides has no kernels.

1. Python 3.11 refuses a dataclass field whose default is an unhashable object, and torch 1.13's
   sharded_tensor metadata has one (fixed in torch 2.0). Such a default becomes a factory that returns the
   same object, which is what Python 3.10 did.
2. fbgemm_gpu (GPU kernels, not packaged by Debian) becomes a package whose every name is an inert class.
   TorchRec imports it at module level; the helpers' shard arithmetic never calls it.
"""

import dataclasses
import importlib.abc
import importlib.machinery
import sys
import types

_original_get_field = dataclasses._get_field


def _unhashable(value):
    return (value is not dataclasses.MISSING and type(value).__hash__ is None
            and not isinstance(value, (list, dict, set)))  # these Python 3.10 refused too


def _get_field(cls, name, annotation, *rest):
    default = cls.__dict__.get(name, dataclasses.MISSING)
    if isinstance(default, dataclasses.Field):
        if _unhashable(default.default):
            value = default.default
            default.default, default.default_factory = dataclasses.MISSING, (lambda value=value: value)
    elif _unhashable(default):
        setattr(cls, name, dataclasses.field(default_factory=lambda value=default: value))
    return _original_get_field(cls, name, annotation, *rest)


dataclasses._get_field = _get_field


class _InertMeta(type):
    """A class whose attributes are further inert classes: enums, ops and modules alike."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _inert(name)

    def __iter__(cls):
        return iter(())


def _inert(name):
    return _InertMeta(name, (), {"__init__": lambda self, *a, **k: None, "__call__": lambda self, *a, **k: None})


class _InertModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _inert(name)
        setattr(self, name, value)
        return value


class _FbgemmGpuFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname == "fbgemm_gpu" or fullname.startswith("fbgemm_gpu."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _InertModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _FbgemmGpuFinder())
