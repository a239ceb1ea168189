"""The config against its JSON schema (workflow/schemas/config.schema.yaml), with the schema's defaults filled
in, as ``snakemake.utils.validate`` does; an error is one line that names the offending key path."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml
from jsonschema import Draft202012Validator, validators

import swapkl.studies  # noqa: F401  (every study folder registers itself)
from swapkl.config import ConfigError
from swapkl.config.job_defaults import fill_job_defaults, study_defaults
from swapkl.study import STUDIES


def _set_defaults(validate_properties):
    """jsonschema's `properties` validator that first fills every missing property that has a default
    (the jsonschema FAQ's recipe, which snakemake.utils.validate uses too)."""

    def properties(validator, props, instance, schema):
        for name, subschema in props.items():
            if "default" in subschema:
                instance.setdefault(name, subschema["default"])
        yield from validate_properties(validator, props, instance, schema)

    return properties


_FILLING = validators.extend(Draft202012Validator,
                             {"properties": _set_defaults(Draft202012Validator.VALIDATORS["properties"])})


def schema_error_message(err: jsonschema.ValidationError) -> str:
    """One line that names the offending config field of a jsonschema ValidationError."""
    where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
    if err.validator == "oneOf" and all("required" in s for s in err.validator_value):
        keys = ", ".join(f"`{s['required'][0]}`" for s in err.validator_value)
        return f"{where}: set exactly one of {keys}"
    return f"{where}: {err.message}"


def _read_yaml(path: str | Path) -> dict:
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml's parser when there


def load_schema(path: str | Path) -> dict:
    """The config schema at ``path`` with the stages' defaults of their job descriptions
    (:func:`swapkl.config.job_defaults.fill_job_defaults`) and the section of every study kept in a folder
    (:data:`swapkl.study.STUDIES`): its ``schema.yaml`` becomes ``$defs/<study>``, and each model gets the section
    (default: ``{}``); a study of the whole run's becomes the top-level section ``<study>`` (default: ``{}``)."""
    schema = _read_yaml(path)
    fill_job_defaults(schema)
    for study in STUDIES.entries():
        if study.name in schema["$defs"] or study.name in schema["$defs"]["model"]["properties"] \
                or study.name in schema["properties"]:
            raise ConfigError(f"{study.schema_file}: the config schema {path} already has a section {study.name!r}")
        schema["$defs"][study.name] = _read_yaml(study.schema_file)
        fill_job_defaults(schema, study_defaults(study))
        sections = schema["properties"] if study.scope == "run" else schema["$defs"]["model"]["properties"]
        sections[study.name] = {"$ref": f"#/$defs/{study.name}", "default": {}}
    return schema


def validate_schema(cfg: dict, schema: dict) -> None:
    """Fill ``cfg``'s defaults in place and validate it; raise :class:`ConfigError` naming the key path."""
    try:
        _FILLING(schema).validate(cfg)
    except jsonschema.ValidationError as err:
        raise ConfigError(schema_error_message(err)) from None
