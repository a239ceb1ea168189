"""Figures of the scale sweep and the mechanism checks; each is drawn when its stage runs (targets: its name)."""

from swapkl.figures.figure_registry import AGGREGATE, Figure, register


def _scale(name: str, inputs: dict, help_: str, *, scope: str = "global", **kw) -> None:
    register(Figure(name, f"swapkl.figures.scale.sweep:plot_{name}", inputs, scope, "scale", help_, targets=name, **kw))


_scale("scaling", {"scaling": "results/scaling.parquet"},
       "mean gap and I/R ratio against parameters, coloured by position encoding")
_scale("rope_counterfactual", {"rope": "results/rope_counterfactual.parquet"},
       "per-pair I/R ratio with rotary embeddings on and off", scope="checkpoint", constrained=True)
_scale("jacobian", {"jacobian": "results/jacobian.parquet", "aggregate": AGGREGATE},
       "||J_k|| per block and against the blocks' swap distances")
_scale("convergence", {"convergence": "results/convergence.parquet"},
       "rank agreement and top-pair stability against the number of prompts")
_scale("domain_slices", {"slices": "results/domain_slices.parquet"},
       "pruning cost on the reference text against the second corpus")
_scale("predictor_validity", {"validity": "results/predictor_validity/{model}/{revision}.parquet"},
       "pair score against the cheaper block's removal cost", scope="checkpoint")
