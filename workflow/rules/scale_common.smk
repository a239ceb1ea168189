# Helpers of the scale sweep and the mechanism / robustness stages (scaling.smk, rope.smk, jacobian.smk,
# convergence.smk, domain_slices.smk, predictor_validity.smk): which models take part and which files they produce. Included from common.smk so that
# get_final_outputs (evaluated when `rule all` is parsed) can list the files. Wiring only.


def check_scale_mechanisms(name, model, fail):
    """Consistency of a model's scaling / rope / jacobian / convergence settings."""
    if model.get("rope_pairs") and (rope_is_on(model) or "same_weights_as" not in model):
        fail(f"models.{name}.rope_pairs", "only for a `rope: off` model with `same_weights_as` (the RoPE-on reference)")
    bad = [p for p in model.get("rope_pairs", []) if p[1] != p[0] + 1]
    if bad:
        fail(f"models.{name}.rope_pairs", f"{bad} are not adjacent pairs [i, i+1]")
    reference = model.get("domain_slice_of")
    if reference is not None:
        other = config["models"].get(reference)
        if other is None or not other["prune"]["enabled"] or not model["prune"]["enabled"]:
            fail(f"models.{name}.domain_slice_of", f"{reference!r} must be another model of this config, and both "
                 "must have prune.enabled")
    if not rope_is_on(model) and "demo" in model and model["demo"]["arch"] not in ("gpt_neox", "llama", "qwen3"):
        fail(f"models.{name}.rope", "rope off needs a RoPE architecture")


def rope_is_on(model):
    """`rope: off` (or YAML's bare off, read as false) switches rotary embeddings off."""
    return model.get("rope", "on") not in ("off", False)


def last_revision(model):
    """The model's final checkpoint: the latest stepN when every revision is one, else the last listed."""
    revisions = config["models"][model]["revisions"]
    if all(_step(r) is not None for r in revisions):
        return max(revisions, key=_step)
    return revisions[-1]


def _own_entries():
    """Enabled models other than seed family members (which copy their entry's settings)."""
    members = seed_members()
    return [m for m in enabled_models() if m not in members]


def scaling_models():
    return [m for m in _own_entries() if config["models"][m]["scaling"]]


def rope_counterfactual_models():
    return [m for m in _own_entries() if not rope_is_on(config["models"][m]) and "same_weights_as" in config["models"][m]]


def jacobian_models():
    return [m for m in _own_entries() if config["models"][m]["jacobian"]["enabled"]]


def convergence_models():
    return [m for m in _own_entries() if config["models"][m]["convergence"]]


def domain_slice_models():
    return [m for m in _own_entries() if config["models"][m].get("domain_slice_of") in enabled_models()]


def predictor_validity_models():
    return [m for m in _own_entries() if config["models"][m]["predictor_validity"]]


def jacobian_file(model):
    return f"results/jacobian/{model}/{last_revision(model)}.parquet"


def scale_mechanism_outputs():
    """Tables of these stages, for get_final_outputs (their figures: the figure registry)."""
    out = []
    if scaling_models():
        out += ["results/scaling.parquet"]
    for model in rope_counterfactual_models():
        out += [f"results/rope_counterfactual/{model}.parquet"]
    if jacobian_models():
        out += ["results/jacobian.parquet", *map(jacobian_file, jacobian_models())]
    if convergence_models():
        out += ["results/convergence.parquet"]
    for model in predictor_validity_models():
        out += [f"results/predictor_validity/{model}.parquet"]
    if domain_slice_models():
        out += ["results/domain_slices.parquet"]
    return out
