"""The one entry point of the config checks, in the workflow's order: duplicate keys in the files, the form of the
studies' sections, the JSON schema (which fills the defaults), the checks of the values as written, seed-family expansion, the
constraints between the expanded models, and last the local checkpoint folders. Every failure is a :class:`swapkl.config.ConfigError` whose
message names the key path (or the file and line); the workflow reports it as ``Invalid config: MESSAGE``."""

from __future__ import annotations

from swapkl.config import ConfigError
from swapkl.config.checks import check_config, check_local_checkpoints
from swapkl.config.consistency import check_consistency, per_model_files
from swapkl.config.schema_validation import load_schema, validate_schema
from swapkl.stats.seed_families import expand_seed_families
from swapkl.config.strict_yaml import check_config_text
from swapkl.study import studies_of


def validate_config(cfg: dict, *, schema_path: str, rules_dir: str, configfiles=(), base_dir: str = ".") -> dict:
    """Validate ``cfg`` in place (defaults filled in, seed families expanded into plain models) and return
    the families ``{family: {"varies": ..., "members": {model: seed}}}``.

    ``configfiles``: the YAML files ``cfg`` was read from (checked for duplicate keys and for tags that are no
    plain YAML type); ``rules_dir``: the
    workflow's rule files (a revision must not share a path with a per-model file they write);
    ``base_dir``: where relative checkpoint paths resolve."""
    check_config_text([str(p) for p in configfiles])
    check_study_sections(cfg)
    validate_schema(cfg, load_schema(schema_path))
    check_config(cfg, base_dir)
    for study in studies_of("run"):  # the sections of the studies of the whole run, by their own checks
        if cfg[study.name]["enabled"] and study.check is not None:
            study.check(cfg)
    entry_only = tuple(study.name for study in studies_of("model") if not study.members)
    cfg["models"], families = expand_seed_families(cfg["models"], entry_only)
    check_consistency(cfg, per_model_files(rules_dir))
    check_local_checkpoints(cfg["models"], base_dir)
    return families


def check_study_sections(cfg: dict) -> None:
    """A study's section is a mapping (`enabled`, `revisions`, its options): a yes/no in its place, or a model key
    the section replaced (the forms some of them had before they were studies in folders), is refused with the
    form to write instead. So is a yes/no in place of a top-level section (a study of the whole run)."""
    for study in studies_of("run"):
        value = cfg.get(study.name)
        if isinstance(value, bool):
            raise ConfigError(f"{study.name}: a study's section is a mapping; write "
                              f"`{study.name}: {{enabled: {str(value).lower()}}}`")
    models = cfg.get("models")
    for name, model in (models.items() if isinstance(models, dict) else ()):  # another shape: the schema says so
        if not isinstance(model, dict):
            continue
        for study in studies_of("model"):
            value = model.get(study.name)
            if isinstance(value, bool):
                raise ConfigError(f"models.{name}.{study.name}: a study's section is a mapping; write "
                                  f"`{study.name}: {{enabled: {str(value).lower()}}}`")
            for key, instead in study.former.items():
                if key in model:
                    raise ConfigError(f"models.{name}.{key}: replaced by the `{study.name}` section; write "
                                      f"`{instead}`")


def invalid_config_message(err: ConfigError) -> str:
    """The one line the workflow stops with when :func:`validate_config` refuses the config."""
    return f"Invalid config: {err}"
