"""Probe protocols: how each probe modifies the model, registered in one place
(:mod:`swapkl.probes.protocols.protocol_registry`).

Importing this package imports every module in it, and each module registers its protocol when imported: a new
protocol is one module in this folder (plus its test), with no list to keep in sync (docs/extending.md).
"""

import importlib
import pkgutil

from swapkl.probes.protocols.protocol_registry import (
    Protocol,
    build_variants,
    get_protocol,
    head_protocol_names,
    parse_protocols,
    protocol_names,
    protocols_help,
    register,
    registered,
    weight_protocol_names,
)

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["Protocol", "build_variants", "get_protocol", "head_protocol_names",
           "parse_protocols", "protocol_names", "protocols_help", "register", "registered", "weight_protocol_names"]
